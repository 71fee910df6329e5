"""The audit models' access helpers: campaigns, assignments, units, labels (pages and API alike).

The roles and the blindness guarantee they serve live in runs.access. Here: an annotator
reaches only their own assignments and, for a unit, only their own label until the unit is
closed; a unit's other labels, the other annotator and the judges' verdicts are for leads
(and reviewers, read-only) only. A verdict unit (one attempt against one item) shows its
annotators the attempt's trajectory and final response, never a verdict on it, its
reasoning or score, and not its stratum (which can name the judges' verdicts) until the
unit closes; verdict units are handed out in a seeded random order for the same reason.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import Http404

from audits.models import Assignment, AuditUnit, Campaign, CampaignState, Subject, UnitState
from runs.access import (
    ANNOTATOR,
    LEAD,
    REVIEWER,
    can_see_all,
    is_lead,
    roles_of,
)


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
        return Assignment.objects.select_related("unit__campaign", "unit__item", "unit__instance").get(
            pk=pk, annotator=user
        )
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


def stratum_for(user, unit: AuditUnit) -> str:
    """The unit's stratum as the user may see it: a verdict unit's stratum can name the judges' verdicts ("all
    pass / ..."), so it follows the verdicts' rule; "" while it is hidden."""
    if unit.campaign.subject == Subject.VERDICT and not may_see_verdicts(user, unit):
        return ""
    return unit.stratum


def may_see_identities(user) -> bool:
    """Who the other annotator was: leads and reviewers only, never annotators."""
    return can_see_all(user)


#: the state an annotator is shown for a unit they may not see settled yet: "disputed" would tell them the other
#: annotator disagreed
UNSETTLED = "unsettled"


def unit_state_for(user, unit: AuditUnit) -> tuple[str, str]:
    """(state, its label) of a unit as the user may see it: the real state for leads, reviewers and closed units,
    `UNSETTLED` while an annotator waits (open and disputed look the same to them)."""
    if may_see_other_labels(user, unit):
        return unit.state, unit.get_state_display()
    return UNSETTLED, "not settled yet"


def campaign_counts_for(user, counts: dict) -> dict:
    """A campaign's counts (audits.selectors.campaign_counts) as the user may see them: units per state and per final
    status are for leads and reviewers (an annotator who saw "1 disputed" after their first label would know the
    other annotator's)."""
    if can_see_all(user):
        return counts
    return {k: v for k, v in counts.items() if k not in ("states", "finals")}
