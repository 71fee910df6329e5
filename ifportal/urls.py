"""URL wiring; pages and APIs live in the apps."""

from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.templatetags.static import static
from django.urls import include, path, reverse_lazy
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView

from audits.views import queue_url
from ifportal.signin import signin_forget, signin_rule
from runs.access import blind_safe, is_blind_annotator


class LoginView(auth_views.LoginView):
    """The sign-in form, stating the rules that slow guessing (ifportal.signin)."""

    def get_context_data(self, **kwargs):
        return super().get_context_data(**kwargs) | {"lockout": signin_rule()}

    def get_default_redirect_url(self):
        """Without a `next`, a blind annotator lands on their labelling queue (labelling is their work); everyone
        else on LOGIN_REDIRECT_URL."""
        if is_blind_annotator(self.request.user):
            return queue_url(self.request.user)
        return super().get_default_redirect_url()


class SignInLinkView(auth_views.PasswordResetConfirmView):
    """The one-time link an administrator makes (`manage.py signin_link`): a new password, then signed in, with
    every count against the name cleared."""

    template_name = "registration/signin_link.html"
    post_reset_login = True
    post_reset_login_backend = "ifportal.auth.CachedModelBackend"
    success_url = reverse_lazy(settings.LOGIN_REDIRECT_URL)

    def form_valid(self, form):
        signin_forget(form.user.get_username())
        return super().form_valid(form)


class FaviconView(RedirectView):
    """/favicon.ico, which browsers ask for on their own whatever a page declares: the portal's icon."""

    permanent = True

    def get_redirect_url(self, *args, **kwargs):
        return static("img/favicon.svg")


urlpatterns = [
    path("favicon.ico", blind_safe(FaviconView.as_view()), name="favicon"),
    path("login/", blind_safe(LoginView.as_view()), name="login"),
    path("logout/", blind_safe(auth_views.LogoutView.as_view()), name="logout"),
    path("login/link/<uidb64>/<token>/", blind_safe(SignInLinkView.as_view()), name="signin-link"),
    path("admin/", admin.site.urls),
    path("api/schema/", blind_safe(SpectacularAPIView.as_view()), name="api-schema"),
    path("api/audits/", include("audits.api_urls")),
    path("api/", include("runs.api.urls")),
    path("audits/", include("audits.urls")),
    path("", include("runs.urls")),
]
