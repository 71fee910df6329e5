"""`{% reachable "runs:checklist-judges" as show %}`: whether a link would work for the user (runs.access.may_open).

Pages leave out tabs, drill-down links and forms that would answer 403 or be ignored for a
blind annotator; the rule is the routes' own declaration, not a second list in the templates.
"""

from django import template

from runs.access import may_open

register = template.Library()


@register.simple_tag(takes_context=True)
def reachable(context, url_name: str, *params: str) -> bool:
    """True when the route serves the request's user and honours the query parameters named in `params`."""
    request = context.get("request")
    return request is None or may_open(request, url_name, *params)
