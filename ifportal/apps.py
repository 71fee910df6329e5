"""The portal's own app: wiring that needs the models loaded (signals), in one place."""
from django.apps import AppConfig


class PortalConfig(AppConfig):
    name = "ifportal"
    verbose_name = "Portal wiring"

    def ready(self) -> None:
        from ifportal import auth  # imports the user and group models: only once the registry is ready

        auth.connect_signals()
