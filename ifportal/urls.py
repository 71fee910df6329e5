"""URL wiring; pages and APIs live in the apps."""
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView

from runs.access import blind_safe

urlpatterns = [
    path("login/", blind_safe(auth_views.LoginView.as_view()), name="login"),
    path("logout/", blind_safe(auth_views.LogoutView.as_view()), name="logout"),
    path("admin/", admin.site.urls),
    path("api/schema/", blind_safe(SpectacularAPIView.as_view()), name="api-schema"),
    path("api/audits/", include("audits.api_urls")),
    path("api/", include("runs.api_urls")),
    path("audits/", include("audits.urls")),
    path("", include("runs.urls")),
]
