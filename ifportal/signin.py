"""Password guessing bounded without letting anyone lock another person out.

Three counts, each slowing only whoever makes the failures:

- per (user name, address) and per address: django-axes (`AXES_LOCKOUT_PARAMETERS`) refuses an
  address that failed IFPORTAL_LOGIN_FAILURE_LIMIT times, for that name or for any name, for
  IFPORTAL_LOGIN_LOCKOUT_MINUTES. It is the attacker's own address that is refused.
- per user name, from addresses the user has never signed in from (`SignInDelay`): after
  IFPORTAL_LOGIN_FAILURE_LIMIT such failures, each further try from such an address must wait
  IFPORTAL_LOGIN_DELAY_SECONDS, doubling with every failure up to IFPORTAL_LOGIN_DELAY_MAX_SECONDS,
  and a try inside the wait is answered "try again in N s" without the password being checked.
  Guessing one user's password from any number of addresses is therefore bounded by about one
  guess per maximum delay; the failures are forgotten after IFPORTAL_LOGIN_DELAY_FORGET_HOURS
  without one.

An address the user signed in from in the last IFPORTAL_LOGIN_KNOWN_ADDRESS_DAYS (django-axes'
access log) is not slowed by the per-user count, so an attacker elsewhere cannot keep the user
out; failures from it are still bounded by the per-address counts. A user with no such address
who meets the delay waits at most the maximum delay, or signs in through a one-time link an
administrator makes (`manage.py signin_link NAME`, or the user admin's action), which also
clears the user's delay.

Every checked attempt from an unknown address is charged before its password is read and
refunded when it was right, under a row lock: attempts sent at once cannot all pass one free slot.
"""

from __future__ import annotations

import math
from datetime import timedelta

from axes.models import AccessLog
from axes.utils import reset as axes_reset
from django.conf import settings
from django.contrib.auth import user_logged_in
from django.contrib.auth.tokens import default_token_generator
from django.core.exceptions import PermissionDenied
from django.db import router, transaction
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from ifportal.models import SignInDelay
from ifportal.security import client_address

#: the request attribute holding the charge to refund when the password turns out right
CHARGE_ATTRIBUTE = "signin_charge"
#: the request attribute holding the seconds a refused attempt must wait
WAIT_ATTRIBUTE = "signin_wait"


def signin_wait_after(failures: int) -> timedelta | None:
    """The wait after the user's `failures`-th failure from unknown addresses: none below the limit, then
    IFPORTAL_LOGIN_DELAY_SECONDS doubling with every failure, capped at IFPORTAL_LOGIN_DELAY_MAX_SECONDS."""
    over = failures - settings.AXES_FAILURE_LIMIT
    if over < 0:
        return None
    # the exponent is bounded too: a name failed for years must not build a number of thousands of digits
    return timedelta(
        seconds=min(
            settings.IFPORTAL_LOGIN_DELAY_SECONDS * 2 ** min(over, 62), settings.IFPORTAL_LOGIN_DELAY_MAX_SECONDS
        )
    )


def address_known(username: str, address: str) -> bool:
    """Whether the user of this name signed in from this address in the last IFPORTAL_LOGIN_KNOWN_ADDRESS_DAYS."""
    since = timezone.now() - timedelta(days=settings.IFPORTAL_LOGIN_KNOWN_ADDRESS_DAYS)
    return AccessLog.objects.filter(username=username, ip_address=address, attempt_time__gte=since).exists()


def signin_charge(username: str) -> tuple[float | None, tuple | None]:
    """Charge one attempt for this name from an unknown address: (seconds to wait, None) when it must wait,
    else (None, the state before the charge, for `signin_refund`)."""
    now = timezone.now()
    with transaction.atomic(using=router.db_for_write(SignInDelay)):
        row, created = SignInDelay.objects.select_for_update().get_or_create(username=username)
        if created:  # names nobody tried for a day are dropped, so invented names cannot pile up
            SignInDelay.objects.filter(last_failure__lt=now - _forget_after()).delete()
        if row.last_failure is not None and now - row.last_failure > _forget_after():
            row.failures, row.retry_at = 0, None
        if row.retry_at is not None and row.retry_at > now:
            return (row.retry_at - now).total_seconds(), None
        before = (row.failures, row.last_failure, row.retry_at)
        row.failures += 1
        row.last_failure = now
        wait = signin_wait_after(row.failures)
        row.retry_at = now + wait if wait else None
        row.save()
        return None, (username, row.failures, now, before)


def signin_refund(charge: tuple) -> None:
    """Undo a charge whose password was right: the state before it, unless another attempt was charged since
    (then only its count goes back by one)."""
    username, failures, charged_at, (failures_before, last_before, retry_before) = charge
    with transaction.atomic(using=router.db_for_write(SignInDelay)):
        row = SignInDelay.objects.select_for_update().filter(username=username).first()
        if row is None:
            return
        if row.failures == failures and row.last_failure == charged_at:
            row.failures, row.last_failure, row.retry_at = failures_before, last_before, retry_before
        else:
            row.failures = max(row.failures - 1, 0)
        row.save()


def signin_forget(username: str) -> None:
    """Clear every count against this name (its delay, and django-axes' failures for it), as after a reset."""
    SignInDelay.objects.filter(username=username).delete()
    axes_reset(username=username)


def signin_link(user, *, base_url: str) -> str:
    """A one-time link that lets `user` choose a new password and signs them in; it stops working once used
    (the token covers the password and the last sign-in) or after PASSWORD_RESET_TIMEOUT."""
    path = reverse(
        "signin-link",
        kwargs={
            "uidb64": urlsafe_base64_encode(force_bytes(user.pk)),
            "token": default_token_generator.make_token(user),
        },
    )
    return base_url.rstrip("/") + path


class SignInDelayBackend:
    """An authentication backend that checks no password: it refuses, before the password is read, an attempt
        from an unknown address that comes inside the user name's wait, and charges every other attempt from such
        an address. Placed after django-axes' backend and before the one that checks passwords; it has no `get_user`,
    so no session names it as its backend."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None or username is None:
            return None
        if address_known(username, client_address(request)):
            return None
        wait, charge = signin_charge(username)
        if wait is None:
            setattr(request, CHARGE_ATTRIBUTE, charge)
            return None
        setattr(request, WAIT_ATTRIBUTE, max(math.ceil(wait), 1))
        # django-axes then records no failure for the address (AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT is
        # off) and its middleware answers with `signin_refused`
        request.axes_locked_out = True
        raise PermissionDenied("sign-in delayed")


def signin_refused(request, original_response=None, credentials=None):
    """The 429 page of a refused sign-in (AXES_LOCKOUT_CALLABLE): the per-user wait with its seconds, or the
    per-address lockout."""
    wait = getattr(request, WAIT_ATTRIBUTE, None)
    username = (credentials or {}).get("username") or request.POST.get("username", "")
    response = render(
        request,
        settings.AXES_LOCKOUT_TEMPLATE,
        {
            "wait": wait,
            "username": username,
            "failure_limit": settings.AXES_FAILURE_LIMIT,
            "lockout_minutes": int(settings.AXES_COOLOFF_TIME.total_seconds() // 60),
        },
        status=429,
    )
    response["Retry-After"] = str(wait or int(settings.AXES_COOLOFF_TIME.total_seconds()))
    return response


def signin_rule() -> dict:
    """The numbers the sign-in page states."""
    return {
        "limit": settings.AXES_FAILURE_LIMIT,
        "minutes": int(settings.AXES_COOLOFF_TIME.total_seconds() // 60),
        "delay": settings.IFPORTAL_LOGIN_DELAY_SECONDS,
        "max_delay": settings.IFPORTAL_LOGIN_DELAY_MAX_SECONDS,
        "known_days": settings.IFPORTAL_LOGIN_KNOWN_ADDRESS_DAYS,
    }


def _forget_after() -> timedelta:
    return timedelta(hours=settings.IFPORTAL_LOGIN_DELAY_FORGET_HOURS)


def _signed_in(sender, request, user, **kwargs) -> None:
    charge = getattr(request, CHARGE_ATTRIBUTE, None) if request is not None else None
    if charge is not None and charge[0] == user.get_username():
        signin_refund(charge)
        setattr(request, CHARGE_ATTRIBUTE, None)


def connect_signals() -> None:
    """Refund the charge of a sign-in whose password was right (called once, by ifportal.apps)."""
    user_logged_in.connect(_signed_in, dispatch_uid="ifportal.signin.refund")
