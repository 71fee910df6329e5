"""Writes for audits: create and start campaigns, reserve assignments, save labels, adjudicate, rewrite items."""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.db.models import Count, Exists, OuterRef
from django.utils import timezone

from audits import access, agreement, sampling, selectors
from audits.models import (
    Adjudication,
    Assignment,
    AuditUnit,
    Campaign,
    CampaignState,
    FinalSource,
    FinalStatus,
    ItemRevision,
    Label,
    Skip,
    Subject,
    UnitState,
)
from audits.rubrics import rubric_for
from runs.categories import normalise_category
from runs.ingest.base import clean, content_hash, text_limit
from runs.models import Benchmark, ChecklistItem, Instance
from runs.services import benchmarks_generation_bump


class AuditError(Exception):
    """A request the audit workflow refuses, with a message for the person."""


class AuditInputError(AuditError):
    """A request naming something that does not exist or cannot be (the API answers 400, not 409)."""


def campaign_create(
    *,
    name: str,
    subject: str,
    benchmarks: Sequence[Benchmark],
    strata: Sequence[str],
    allocation: str,
    size: int,
    seed: int,
    minimum_per_stratum: int = 0,
    annotators_per_unit: int = 2,
    reservation_minutes: int = 30,
    stratum_sd: dict | None = None,
    sd_from: Campaign | None = None,
    pilot: bool = False,
    annotators: Sequence = (),
    user=None,
) -> Campaign:
    """A draft campaign (nothing sampled yet); `annotators`, when given, are the only people who receive its units.

    `stratum_sd` (Neyman allocation) is read from the pilot campaign `sd_from` where given; explicit figures win.
    """
    unknown = set(strata) - set(sampling.STRATA)
    if unknown:
        raise AuditError(f"unknown strata: {', '.join(sorted(unknown))}")
    stratum_sd = {**(agreement.pilot_sd(sd_from) if sd_from is not None else {}), **_clean_sd(stratum_sd or {})}
    campaign = Campaign.objects.create(
        name=name,
        subject=subject,
        strata=list(strata),
        allocation=allocation,
        size=size,
        seed=seed,
        minimum_per_stratum=minimum_per_stratum,
        annotators_per_unit=annotators_per_unit,
        reservation_minutes=reservation_minutes,
        stratum_sd=stratum_sd,
        pilot=pilot,
        created_by=user,
    )
    campaign.benchmarks.set(benchmarks)
    if annotators:
        campaign_assign(campaign, annotators)
    return campaign


def _clean_sd(stratum_sd: dict) -> dict[str, float]:
    out = {}
    for stratum, value in stratum_sd.items():
        try:
            sd = float(value)
        except (TypeError, ValueError):
            raise AuditError(f"standard deviation of stratum {stratum!r} is not a number: {value!r}") from None
        if not 0 <= sd < float("inf"):
            raise AuditError(f"standard deviation of stratum {stratum!r} must be a finite number >= 0, not {value!r}")
        out[str(stratum)] = sd
    return out


def campaign_assign(campaign: Campaign, annotators: Sequence) -> None:
    """The people who receive the campaign's units (annotators or leads); an empty list opens it to every annotator.

    Reservations held by someone no longer assigned are released; their saved labels stay.
    """
    people = list(annotators)
    refused = [u.get_username() for u in people if not access.roles_of(u) & {access.LEAD, access.ANNOTATOR}]
    if refused:
        raise AuditError(f"not an annotator: {', '.join(sorted(refused))}")
    campaign.annotators.set(people)
    if people:
        Assignment.objects.filter(unit__campaign=campaign, label__isnull=True).exclude(annotator__in=people).delete()


def campaign_set_pilot(campaign: Campaign, pilot: bool) -> None:
    """Mark a campaign as a pilot (exclusion policies leave it out unless chosen) or as a real audit."""
    if campaign.pilot == pilot:
        return
    campaign.pilot = pilot
    campaign.save(update_fields=["pilot"])
    benchmarks_generation_bump(campaign.benchmarks.values_list("id", flat=True))  # what exclusion policies read changed


def _campaign_draw(campaign: Campaign, cands: list[sampling.Candidate]) -> list[tuple[str, sampling.Candidate]]:
    return sampling.sample(
        cands,
        strata=campaign.strata,
        mode=campaign.allocation,
        size=campaign.size,
        seed=campaign.seed,
        minimum=campaign.minimum_per_stratum,
        sd=campaign.stratum_sd,
    )


def campaign_sample(campaign: Campaign) -> list[tuple[str, sampling.Candidate]]:
    """The sample the campaign's settings and seed draw from the current candidates (the frozen one when unchanged)."""
    return _campaign_draw(
        campaign, selectors.candidates(campaign.subject, campaign.benchmarks.values_list("id", flat=True))
    )


@transaction.atomic
def campaign_start(campaign: Campaign) -> Campaign:
    """Freeze the sample: create its units and the population per stratum; idempotent once started."""
    original, campaign = campaign, Campaign.objects.select_for_update().get(pk=campaign.pk)
    if campaign.state != CampaignState.DRAFT:
        return campaign
    cands = selectors.candidates(campaign.subject, campaign.benchmarks.values_list("id", flat=True))
    if not cands:
        raise AuditError("These benchmarks have nothing to audit for this subject.")
    drawn = _campaign_draw(campaign, cands)
    if campaign.subject == Subject.VERDICT:
        # units are handed out in sample order: in stratum order a verdict unit's place would tell the judges' verdicts
        random.Random(f"{campaign.seed}:order").shuffle(drawn)
    AuditUnit.objects.bulk_create(
        [
            AuditUnit(
                campaign=campaign,
                key=c.key,
                position=n,
                stratum=stratum,
                instance_id=c.instance_id,
                item_id=c.item_id,
                turn=c.turn,
                attempt_id=c.attempt_id,
            )
            for n, (stratum, c) in enumerate(drawn, start=1)
        ]
    )
    campaign.population = sampling.population(cands, campaign.strata)
    campaign.state = CampaignState.STARTED
    campaign.started_at = timezone.now()
    campaign.save(update_fields=["population", "state", "started_at"])
    original.population, original.state, original.started_at = campaign.population, campaign.state, campaign.started_at
    return campaign


def reservations_expire(*, now=None) -> int:
    """Free every expired reservation (an assignment without a label past `expires_at`); returns how many."""
    now = now or timezone.now()
    deleted, _ = Assignment.objects.filter(submitted_at__isnull=True, expires_at__lt=now, label__isnull=True).delete()
    return deleted


def may_receive(campaign: Campaign, user) -> bool:
    """Whether the campaign gives this user units: its assigned annotators, or any annotator or lead when none is assigned."""
    if not access.roles_of(user) & {access.LEAD, access.ANNOTATOR}:
        return False
    assigned = campaign.annotators.all()
    return not assigned.exists() or assigned.filter(pk=user.pk).exists()


def assignment_held(campaign: Campaign, annotator, *, now=None) -> Assignment | None:
    """The live reservation the annotator holds in the campaign, if any (reads only: nothing is reserved)."""
    now = now or timezone.now()
    return (
        Assignment.objects.filter(
            unit__campaign=campaign, annotator=annotator, submitted_at__isnull=True, expires_at__gte=now
        )
        .select_related("unit__item", "unit__instance", "unit__campaign")
        .order_by("unit__position")
        .first()
    )


def assignment_next(campaign: Campaign, annotator, *, skip: Sequence[int] = (), now=None) -> Assignment | None:
    """The annotator's next assignment: a live reservation they hold (not in `skip`), else a new one.

    A new reservation takes the first unit (sample order) that is open, has a free slot and
    was never assigned to this annotator; units they put back (skipped or released) come
    last. Only the campaign's assigned annotators receive units (anyone may when none is
    assigned). Two annotators racing for the last slot meet the unique (unit, slot)
    constraint; the loser retries on the next unit.
    """
    if campaign.state != CampaignState.STARTED or not may_receive(campaign, annotator):
        return None
    now = now or timezone.now()
    reservations_expire(now=now)
    held = (
        Assignment.objects.filter(
            unit__campaign=campaign, annotator=annotator, submitted_at__isnull=True, expires_at__gte=now
        )
        .exclude(pk__in=list(skip))
        .order_by("unit__position")
        .first()
    )
    if held:
        return held
    put_back = Skip.objects.filter(unit=OuterRef("pk"), annotator=annotator)
    for _ in range(20):
        unit = (
            AuditUnit.objects.filter(campaign=campaign, state=UnitState.OPEN)
            .exclude(assignments__annotator=annotator)
            .annotate(n=Count("assignments"), put_back=Exists(put_back))
            .filter(n__lt=campaign.annotators_per_unit)
            .order_by("put_back", "position")
            .first()
        )
        if unit is None:
            return None
        taken = set(unit.assignments.values_list("slot", flat=True))
        free = [s for s in range(1, campaign.annotators_per_unit + 1) if s not in taken]
        if not free:
            continue  # someone took the last slot between the two queries: look again
        try:
            with transaction.atomic():
                return Assignment.objects.create(
                    unit=unit,
                    annotator=annotator,
                    slot=free[0],
                    reserved_at=now,
                    expires_at=now + timedelta(minutes=campaign.reservation_minutes),
                )
        except IntegrityError:
            continue  # someone took that slot (or this annotator got the unit in another tab): try again
    return None


def assignment_release(assignment: Assignment, *, now=None) -> None:
    """Put a held unit back: the reservation ends at once (the unit is free for others) and the unit goes to the
    end of this annotator's queue. Refused once the label is saved (correct it instead)."""
    now = now or timezone.now()
    with transaction.atomic():
        if Label.objects.filter(assignment_id=assignment.pk).exists():
            raise AuditError("You saved a label on this unit: correct it instead of putting it back.")
        Assignment.objects.filter(pk=assignment.pk, label__isnull=True).delete()
        Skip.objects.update_or_create(
            unit_id=assignment.unit_id, annotator_id=assignment.annotator_id, defaults={"at": now}
        )


def label_submit(
    assignment: Assignment, values: dict, *, note: str = "", link: str = "", correct: bool = False, now=None
) -> Label:
    """Save the annotator's label once: a repeated submission updates the same label while the unit is open.

    The unit row is locked so two annotators finishing one unit at the same moment both
    see each other's label, and exactly one of them closes or disputes it. A `correct`ion of
    a saved label is refused once the unit has settled (a plain repeat then changes nothing).
    """
    now = now or timezone.now()
    rubric = rubric_for(assignment.unit.campaign.subject)
    try:
        clean = rubric.clean(values)
    except ValueError as exc:
        raise AuditError(str(exc)) from None
    with transaction.atomic():
        unit = AuditUnit.objects.select_for_update().get(pk=assignment.unit_id)
        if not Assignment.objects.filter(pk=assignment.pk).exists():
            raise AuditError("This reservation expired and the item went to someone else; your label was not saved.")
        label = Label.objects.filter(assignment=assignment).first()
        if label and unit.state != UnitState.OPEN:
            if correct:
                raise AuditError(
                    "This unit has settled (every annotator labelled it), so your label can no longer change."
                )
            return label  # the unit is decided: a late repeat changes nothing
        fields = {"values": clean, "valid": rubric.is_valid(clean), "note": note, "link": link[:300]}
        if label:
            for k, v in fields.items():
                setattr(label, k, v)
            label.save()
        else:
            label = Label.objects.create(assignment=assignment, **fields)
        Assignment.objects.filter(pk=assignment.pk, submitted_at__isnull=True).update(submitted_at=now)
        _unit_settle(unit, rubric, now=now)
    return label


def _unit_settle(unit: AuditUnit, rubric, *, now) -> None:
    """Close a unit whose labels all agree; send it to adjudication when they differ; wait otherwise."""
    labels = list(Label.objects.filter(assignment__unit=unit))
    if len(labels) < unit.campaign.annotators_per_unit:
        return
    agreed = [len({str(label.values.get(c.name)) for label in labels}) == 1 for c in rubric.criteria]
    unit.agreement = sum(agreed) / len(agreed)
    if all(agreed):
        unit.state = UnitState.CLOSED
        if rubric.is_undecided(labels[0].values):  # all say "cannot tell": decided, but undecided
            unit.final_status = FinalStatus.UNRESOLVED
        else:
            unit.final_status = FinalStatus.VALID if labels[0].valid else FinalStatus.INVALID
        unit.final_source = FinalSource.UNANIMOUS
        unit.closed_at = now
    else:
        unit.state = UnitState.DISPUTED
    unit.save(update_fields=["agreement", "state", "final_status", "final_source", "closed_at"])
    benchmarks_generation_bump(
        unit.campaign.benchmarks.values_list("id", flat=True)
    )  # exclusion policies read unit states


@transaction.atomic
def unit_adjudicate(
    unit: AuditUnit,
    *,
    lead,
    final_status: str,
    reason: str = "",
    upheld_slot: int | None = None,
    note: str = "",
    shown_order: Sequence[int] = (),
) -> Adjudication:
    """Record a lead's decision on a disputed unit and close it; the source is "adjudicated" or "unresolved"."""
    unit = AuditUnit.objects.select_for_update().select_related("campaign").get(pk=unit.pk)
    if unit.state != UnitState.DISPUTED:
        raise AuditError("Only units whose labels disagree are adjudicated.")
    own = Assignment.objects.filter(unit=unit, annotator=lead).values_list("slot", flat=True).first()
    if own is not None:
        raise AuditError(f"You labelled this unit yourself (slot {own}); another lead adjudicates it.")
    if final_status not in FinalStatus.values:
        raise AuditInputError(f"final status must be one of {', '.join(FinalStatus.values)}")
    issues = {k for k, _ in rubric_for(unit.campaign.subject).issues}
    if reason and reason not in issues:
        raise AuditInputError(f"reason must be one of {', '.join(sorted(issues))}")
    slots = sorted(Label.objects.filter(assignment__unit=unit).values_list("assignment__slot", flat=True))
    if upheld_slot is not None and upheld_slot not in slots:
        raise AuditInputError(
            f"upheld_slot {upheld_slot} does not exist: this unit's labels are in slot"
            f"{'s' if len(slots) != 1 else ''} {', '.join(map(str, slots))}"
        )
    if shown_order and sorted(shown_order) != slots:
        raise AuditInputError(f"shown_order must list the unit's label slots {', '.join(map(str, slots))} once each")
    adjudication = Adjudication.objects.create(
        unit=unit,
        lead=lead,
        final_status=final_status,
        reason=reason,
        upheld_slot=upheld_slot,
        note=note,
        shown_order=list(shown_order),
    )
    unit.state = UnitState.CLOSED
    unit.final_status = final_status
    unit.final_source = FinalSource.UNRESOLVED if final_status == FinalStatus.UNRESOLVED else FinalSource.ADJUDICATED
    unit.closed_at = timezone.now()
    unit.save(update_fields=["state", "final_status", "final_source", "closed_at"])
    benchmarks_generation_bump(
        unit.campaign.benchmarks.values_list("id", flat=True)
    )  # exclusion policies read unit states
    return adjudication


# item rewrites -------------------------------------------------------------------------------
class ItemAlreadyRewritten(AuditError):
    """The item has a newer version: only the newest version of an item can be rewritten."""


REWRITE_MAX_TEXT = 20_000  # characters of a rewritten description
KEY_MAX, CHECK_TYPE_MAX, CATEGORY_MAX = (
    text_limit(ChecklistItem, f) for f in ("key", "check_type", "category_original")
)


def item_rewrite(
    *,
    item: ChecklistItem,
    lead,
    description: str,
    check_type: str | None = None,
    category: str | None = None,
    reason: str = "",
    unit: AuditUnit | None = None,
) -> ChecklistItem:
    """Rewrite an item as a new version (leads only): a new item `<key>@v<n>` in the same instance that supersedes it.

    Everything not given is copied from the old item; `details` gets the provenance under
    "audit_rewrite" and an ItemRevision row keeps who, when, why and both texts. The old
    item and its verdicts stay as they are. Only the newest version can be rewritten, and
    at most once: a second (or concurrent, or repeated) rewrite of the same version is
    refused with ItemAlreadyRewritten, whatever the database let through first.
    """
    access.require_lead(lead)
    description = clean(description or "").strip()
    reason = clean(reason or "").strip()
    if not description:
        raise AuditError("The rewritten item needs a description.")
    if len(description) > REWRITE_MAX_TEXT:
        raise AuditError(f"The description is longer than {REWRITE_MAX_TEXT:,} characters.")
    if unit is not None and item.pk not in {i.pk for i in selectors.unit_items(unit)}:
        raise AuditError("This audit unit is not about that item.")
    try:
        with transaction.atomic():
            old = ChecklistItem.objects.select_for_update().get(pk=item.pk)
            _refuse_when_rewritten(old)
            new = _new_version(
                old,
                lead=lead,
                description=description,
                reason=reason,
                unit=unit,
                check_type=None if check_type is None else clean(check_type).strip(),
                category=None if category is None else clean(category).strip(),
            )
            ItemRevision.objects.create(
                old_item=old,
                new_item=new,
                lead=lead,
                reason=reason,
                unit=unit,
                old_description=old.description,
                new_description=description,
            )
            # the "superseded" exclusion policy now leaves the old version out: cached leaderboards are stale
            benchmarks_generation_bump(
                Instance.objects.filter(pk=old.instance_id).values_list("benchmark_id", flat=True)
            )
    except IntegrityError:
        # a concurrent rewrite of the same version won the one-to-one `supersedes`, or took the key
        _refuse_when_rewritten(item)
        raise AuditError(
            "Another item took the new version's key at the same moment; submit the rewrite again."
        ) from None
    return new


def _refuse_when_rewritten(item: ChecklistItem) -> None:
    newer = ChecklistItem.objects.filter(supersedes_id=item.pk).values_list("key", "version").first()
    if newer:
        raise ItemAlreadyRewritten(
            f"This item was already rewritten as v{newer[1]} ('{newer[0]}'); "
            "only the newest version of an item can be rewritten."
        )


def _new_version(
    old: ChecklistItem,
    *,
    lead,
    description: str,
    reason: str,
    unit: AuditUnit | None,
    check_type: str | None,
    category: str | None,
) -> ChecklistItem:
    check_type = old.check_type if check_type is None else check_type
    spelling = old.category_original or old.category  # what the lead was shown and may have kept
    if category is None or category == spelling:
        category, category_original = old.category, old.category_original
    else:
        category, category_original = (normalise_category(category) if category else ""), category
    if (description, check_type, category_original) == (old.description, old.check_type, old.category_original):
        raise AuditError("The rewrite changes nothing: give a new description, check type or category.")
    if len(check_type) > CHECK_TYPE_MAX or len(category_original) > CATEGORY_MAX:
        raise AuditError(f"A check type has at most {CHECK_TYPE_MAX} characters and a category at most {CATEGORY_MAX}.")
    version = old.version + 1
    key = _version_key(old, version)
    details = {
        **(old.details if isinstance(old.details, dict) else {"original": old.details}),
        "audit_rewrite": {
            "rewrites": old.key,
            "version": version,
            "by": lead.get_username(),
            "at": timezone.now().isoformat(),
            "reason": reason,
            "unit": unit.pk if unit is not None else None,
        },
    }
    # the item as a native `items` record: its hash is what a native import of that record stores
    record = {
        "key": key,
        "category": category_original or category,
        "check_type": check_type,
        "group": old.group,
        "description": description,
        "conditional": old.conditional,
        "turn": old.turn,
        "privilege": old.privilege,
        "details": details,
    }
    return ChecklistItem.objects.create(
        instance_id=old.instance_id,
        key=key,
        position=old.position,
        category=category,
        category_original=category_original,
        check_type=check_type,
        group=old.group,
        description=description,
        conditional=old.conditional,
        turn=old.turn,
        privilege=old.privilege,
        details=details,
        content_hash=content_hash([old.position, record]),
        version=version,
        supersedes=old,
    )


def _version_key(old: ChecklistItem, version: int) -> str:
    """`<first version's key>@v<n>`, cut to fit the key column; `-2`, `-3`... appended if an item already has it."""
    root = old
    while root.supersedes_id:
        root = ChecklistItem.objects.only("key", "supersedes_id").get(pk=root.supersedes_id)
    taken = set(
        ChecklistItem.objects.filter(instance_id=old.instance_id, key__contains=f"@v{version}").values_list(
            "key", flat=True
        )
    )
    for n in itertools.count(1):
        suffix = f"@v{version}" + (f"-{n}" if n > 1 else "")
        key = root.key[: KEY_MAX - len(suffix)] + suffix
        if key not in taken:
            return key
    raise AssertionError("itertools.count() does not end")
