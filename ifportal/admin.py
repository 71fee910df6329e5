"""Admin for sign-in: the per-name delays (ifportal.signin), and a user action that makes one-time sign-in links."""

from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin

from ifportal.models import SignInDelay
from ifportal.signin import signin_link

User = get_user_model()


@admin.register(SignInDelay)
class SignInDelayAdmin(admin.ModelAdmin):
    """Who is being guessed at: deleting a row lifts that name's delay."""

    list_display = ("username", "failures", "last_failure", "retry_at")
    search_fields = ("username",)
    ordering = ("-last_failure",)
    readonly_fields = ("username", "failures", "last_failure", "retry_at")

    def has_add_permission(self, request) -> bool:
        return False


@admin.action(description="Make a one-time sign-in link (sets a new password, lifts the sign-in delay)")
def make_signin_link(modeladmin, request, queryset):
    """Show each selected active user's link, to send them by a channel you trust."""
    for user in queryset.filter(is_active=True):
        link = signin_link(user, base_url=request.build_absolute_uri("/"))
        modeladmin.message_user(request, f"One-time sign-in link for {user.get_username()}: {link}", messages.INFO)


class PortalUserAdmin(UserAdmin):
    actions = [*UserAdmin.actions, make_signin_link]


admin.site.unregister(User)
admin.site.register(User, PortalUserAdmin)
