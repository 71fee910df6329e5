"""The portal's own tables: what sign-in throttling keeps per user name (ifportal.signin)."""

from django.db import models


class SignInDelay(models.Model):
    """Failed sign-ins for one user name from addresses it has not signed in from, and when the next may be tried.

    Keyed by the name as typed, whether or not such a user exists, so the delay says nothing about which
    names are accounts. `ifportal.signin` charges each checked attempt before the password is read and
    refunds it when the password was right.
    """

    username = models.CharField(max_length=150, unique=True)
    failures = models.PositiveIntegerField(default=0)
    last_failure = models.DateTimeField(null=True, blank=True, db_index=True)
    retry_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "sign-in delay"

    def __str__(self) -> str:
        return f"{self.username}: {self.failures} failures"
