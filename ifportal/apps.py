"""The portal's own app: wiring that needs the models loaded (signals), and the sign-in delay table (ifportal.signin)."""

from django.apps import AppConfig


class PortalConfig(AppConfig):
    name = "ifportal"
    verbose_name = "Portal wiring"

    def ready(self) -> None:
        from ifportal import auth, signin  # import the user, group and axes models: only once the registry is ready

        auth.connect_signals()
        signin.connect_signals()
