"""Every access decision of the audit pages and API: roles, campaigns, assignments, units, labels.

Roles are Django groups ("lead", "annotator", "reviewer"); superusers count as leads.
Blinding lives here: an annotator reaches only their own assignments and, for a unit,
only their own label until the unit is closed; a unit's other labels, the other
annotator and the judges' verdicts are for leads (and reviewers, read-only) only.
"""
from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import Http404

from ifportal.roles import ANNOTATOR, LEAD, REVIEWER  # noqa: F401  (part of this module's interface)

from .models import Assignment, AuditUnit, Campaign, CampaignState, UnitState


def roles_of(user) -> set[str]:
    """The audit roles of a user (a superuser is a lead)."""
    if not user.is_authenticated:
        return set()
    roles = set(user.groups.filter(name__in=(LEAD, ANNOTATOR, REVIEWER)).values_list("name", flat=True))
    if user.is_superuser:
        roles.add(LEAD)
    return roles


def is_lead(user) -> bool:
    return LEAD in roles_of(user)


def can_see_all(user) -> bool:
    """Leads and reviewers see every label, identity and verdict; annotators do not."""
    return bool(roles_of(user) & {LEAD, REVIEWER})


def require_lead(user) -> None:
    """PermissionDenied unless the user is a lead."""
    if not is_lead(user):
        raise PermissionDenied("Only leads can do this.")


def require_overseer(user) -> None:
    """PermissionDenied unless the user sees every label (leads and reviewers)."""
    if not can_see_all(user):
        raise PermissionDenied("Only leads and reviewers can read this.")


def require_annotator(user) -> None:
    """PermissionDenied unless the user may label (annotators and leads)."""
    if not roles_of(user) & {LEAD, ANNOTATOR}:
        raise PermissionDenied("Only annotators can label.")


def campaigns_for_user(user):
    """The campaigns a user may open: all for leads and reviewers, started ones for annotators, none otherwise."""
    roles = roles_of(user)
    if roles & {LEAD, REVIEWER}:
        return Campaign.objects.all()
    if ANNOTATOR in roles:
        return Campaign.objects.exclude(state=CampaignState.DRAFT)
    return Campaign.objects.none()


def campaign_for_user(user, pk: int) -> Campaign:
    """The campaign, or 404 when the user may not open it."""
    try:
        return campaigns_for_user(user).get(pk=pk)
    except Campaign.DoesNotExist:
        raise Http404("No such campaign.") from None


def assignment_for_annotator(user, pk: int) -> Assignment:
    """The user's own assignment, or 404 (another annotator's assignment does not exist for them)."""
    try:
        return Assignment.objects.select_related("unit__campaign", "unit__item", "unit__instance").get(pk=pk, annotator=user)
    except Assignment.DoesNotExist:
        raise Http404("No such assignment.") from None


def unit_for_user(user, pk: int) -> AuditUnit:
    """A unit the user may look at: any for leads and reviewers; for annotators only units they were assigned."""
    qs = AuditUnit.objects.select_related("campaign", "item", "instance")
    if not can_see_all(user):
        qs = qs.filter(assignments__annotator=user)
    try:
        return qs.get(pk=pk)
    except AuditUnit.DoesNotExist:
        raise Http404("No such unit.") from None


def unit_for_lead(user, pk: int) -> AuditUnit:
    """A unit to adjudicate: leads only."""
    require_lead(user)
    return unit_for_user(user, pk)


def may_see_other_labels(user, unit: AuditUnit) -> bool:
    """Leads and reviewers always; an annotator of the unit only once it is closed (labels stay anonymous)."""
    return can_see_all(user) or unit.state == UnitState.CLOSED


def may_see_verdicts(user, unit: AuditUnit) -> bool:
    """The judges' verdicts on the unit's items: same rule as the other labels."""
    return may_see_other_labels(user, unit)


def may_see_identities(user) -> bool:
    """Who the other annotator was: leads and reviewers only, never annotators."""
    return can_see_all(user)
