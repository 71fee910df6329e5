"""The roles every app shares (Django groups) and the one rule the results pages need from them.

Roles: "lead", "annotator", "reviewer" (a superuser counts as a lead; a signed-in user in no
group reads results like a reviewer). An annotator who is neither reviewer nor lead is
*blind*: they label audit units without seeing how judges scored the items, so the pages
and API endpoints that show per-item verdicts, judge reasoning or trajectories refuse them
(issue 7: "an annotator never sees ... the judges' verdicts on the item until the item is
closed"; their closed units show the verdicts on the audit pages). Aggregates
(leaderboards, survival curves, metric tables) stay open to them.
"""
from __future__ import annotations

from functools import wraps

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from rest_framework.permissions import BasePermission

LEAD, ANNOTATOR, REVIEWER = "lead", "annotator", "reviewer"
BLIND_REFUSAL = ("Annotators label blind: judges' verdicts, their reasoning and the trajectories behind them are for "
                 "reviewers and leads. Your closed audit units show the verdicts on their items; ask a lead for the "
                 "reviewer role to browse results.")


def is_blind_annotator(user) -> bool:
    """An annotator who is not also a reviewer, a lead, staff or a superuser."""
    if not user.is_authenticated or user.is_superuser or user.is_staff:
        return False
    groups = getattr(user, "_ifportal_roles", None)  # read once per request's user object (pages ask several times)
    if groups is None:
        groups = set(user.groups.filter(name__in=(LEAD, ANNOTATOR, REVIEWER)).values_list("name", flat=True))
        user._ifportal_roles = groups
    return groups == {ANNOTATOR}


IMPORT_REFUSAL = "Annotators label audit units; importing data is for reviewers and leads."


def may_import(user) -> bool:
    """Whether the user may import data (upload files, start ingest jobs): anyone signed in but a blind annotator."""
    return user.is_authenticated and not is_blind_annotator(user)


def importer_required(view):
    """A signed-in user who may import (blind annotators get 403 with the reason)."""
    @login_required
    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if not may_import(request.user):
            raise PermissionDenied(IMPORT_REFUSAL)
        return view(request, *args, **kwargs)
    return wrapped


class Importer(BasePermission):
    """The API side of `importer_required`."""

    message = IMPORT_REFUSAL

    def has_permission(self, request, view) -> bool:
        return may_import(request.user)


def verdict_reader_required(view):
    """A signed-in user who is not a blind annotator (others get 403 with the reason)."""
    @login_required
    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if is_blind_annotator(request.user):
            raise PermissionDenied(BLIND_REFUSAL)
        return view(request, *args, **kwargs)
    return wrapped


class VerdictReader(BasePermission):
    """The API side of `verdict_reader_required` (authentication is checked by IsAuthenticated before it)."""

    message = BLIND_REFUSAL

    def has_permission(self, request, view) -> bool:
        return not is_blind_annotator(request.user)
