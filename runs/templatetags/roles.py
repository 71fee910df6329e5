"""Role checks for templates (the rules themselves live in ifportal.roles)."""
from django import template

from ifportal import roles

register = template.Library()


@register.filter
def may_import(user) -> bool:
    """Whether the user may import data (the navigation shows Import only to them)."""
    return roles.may_import(user)
