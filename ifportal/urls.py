"""URL wiring; pages and APIs live in the apps."""
from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView

from runs.access import blind_safe


class LoginView(auth_views.LoginView):
    """The sign-in form, stating the lockout rule django-axes enforces (settings.AXES_*)."""

    def get_context_data(self, **kwargs):
        return super().get_context_data(**kwargs) | {"lockout": {
            "limit": settings.AXES_FAILURE_LIMIT, "minutes": int(settings.AXES_COOLOFF_TIME.total_seconds() // 60)}}


class FaviconView(RedirectView):
    """/favicon.ico, which browsers ask for on their own whatever a page declares: the portal's icon."""

    permanent = True

    def get_redirect_url(self, *args, **kwargs):
        return static("img/favicon.svg")


urlpatterns = [
    path("favicon.ico", blind_safe(FaviconView.as_view()), name="favicon"),
    path("login/", blind_safe(LoginView.as_view()), name="login"),
    path("logout/", blind_safe(auth_views.LogoutView.as_view()), name="logout"),
    path("admin/", admin.site.urls),
    path("api/schema/", blind_safe(SpectacularAPIView.as_view()), name="api-schema"),
    path("api/audits/", include("audits.api_urls")),
    path("api/", include("runs.api.urls")),
    path("audits/", include("audits.urls")),
    path("", include("runs.urls")),
]
