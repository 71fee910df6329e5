"""Reads for audits: candidate units, queues, progress, label views, and the items an exclusion policy leaves out."""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterable

from django.db.models import Count, Exists, OuterRef, Q

from audits import effect, sampling
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
    Subject,
    UnitState,
)
from audits.sampling import Candidate
from runs.models import (
    Attempt,
    Benchmark,
    BenchmarkKind,
    ChecklistItem,
    Instance,
    JudgeKind,
    Verdict,
    VerdictResult,
)
from runs.selectors.item_health import ITEM_KINDS, health_report

#: exclusion policies offered on leaderboards: URL value -> label
POLICIES = {
    "flagged_by_either": "flagged by either annotator",
    "flagged_by_both": "flagged by both annotators",
    "adjudicated_invalid": "final status invalid (unanimous or adjudicated)",
    "superseded": "items replaced by a newer version",
}
SUBJECT_KINDS = {
    Subject.CHECKLIST: ("checklist", "conflict"),
    Subject.HIERARCHY: ("hierarchy",),
    Subject.DIALOGUE: ("dialogue",),
    Subject.VERDICT: ("checklist", "conflict", "dialogue"),
}
#: the "judges" stratum of a verdict unit: what the judges' pass/fail verdicts on it say together
JUDGES_ALL_PASS, JUDGES_ALL_FAIL, JUDGES_SPLIT = "all pass", "all fail", "split"


def candidates(subject: str, benchmark_ids: Iterable[int]) -> list[Candidate]:
    """Every unit a campaign on these benchmarks could sample, with its stratum facets and text (two queries at most)."""
    benchmark_ids = list(benchmark_ids)
    if subject == Subject.VERDICT:
        return verdict_candidates(benchmark_ids)
    # an item rewritten as a newer version is not audited again: its newest version is
    items = (
        ChecklistItem.objects.filter(instance__benchmark_id__in=benchmark_ids, superseded_by__isnull=True)
        .values_list(
            "id",
            "key",
            "instance_id",
            "instance__external_id",
            "instance__benchmark__slug",
            "category",
            "check_type",
            "conditional",
            "instance__primary_category",
            "description",
            "turn",
        )
        .order_by()
    )
    if subject != Subject.DIALOGUE:
        health = item_health_strata(benchmark_ids)
        return [
            Candidate(
                key=f"{slug}/{ext}/{key}",
                instance_id=inst,
                item_id=pk,
                turn=None,
                text=desc,
                facets={
                    "category": cat,
                    "check_type": ctype,
                    "primary_category": primary,
                    "benchmark": slug,
                    "conditional": "conditional" if cond else "unconditional",
                    "health": health.get(pk, UNFLAGGED),
                },
            )
            for pk, key, inst, ext, slug, cat, ctype, cond, primary, desc, _ in items
        ]
    turns = {
        (inst, turn): (ext, slug, primary)
        for _, _, inst, ext, slug, _, _, _, primary, _, turn in items
        if turn is not None
    }
    specs = dict(Instance.objects.filter(id__in={i for i, _ in turns}).values_list("id", "spec"))
    out = []
    for (inst, turn), (ext, slug, primary) in turns.items():
        out.append(
            Candidate(
                key=f"{slug}/{ext}/turn-{turn:03d}",
                instance_id=inst,
                item_id=None,
                turn=turn,
                text=_user_query(specs.get(inst) or {}, turn),
                facets={"primary_category": primary, "benchmark": slug},
            )
        )
    return out


#: the health stratum of an item no item health flag marks: the control a flag's confirmed share is read against
UNFLAGGED = "unflagged"


def item_health_strata(benchmark_ids: Iterable[int]) -> dict[int, str]:
    """Each flagged item's health stratum: its first item health flag (runs.metrics.item_health.FLAGS order), from
    each benchmark's cached item health report; items with no flag are UNFLAGGED."""
    out = {}
    for benchmark in Benchmark.objects.filter(id__in=list(benchmark_ids), kind__in=ITEM_KINDS).order_by("id"):
        out.update({i.item_id: i.flags[0] for i in health_report(benchmark).items if i.flags})
    return out


#: the verdicts a verdict audit checks: machine judges' (a person's is no judge's), on a dialogue benchmark the LLM
#: judges' only (code checks its other constraints)
AUDITED_JUDGES = Q(attempt__run__benchmark__kind=BenchmarkKind.DIALOGUE, judge__kind=JudgeKind.LLM) | ~Q(
    attempt__run__benchmark__kind=BenchmarkKind.DIALOGUE
) & ~Q(judge__kind=JudgeKind.HUMAN)


def verdict_candidates(benchmark_ids: Iterable[int]) -> list[Candidate]:
    """Every (attempt, checklist item) a judge gave a pass or a fail (one query over the verdicts, in key order).

    Judges are the benchmark's machine judges (people's verdicts are no judge's); on a dialogue benchmark only the
    LLM judges (its other constraints are checked by code). Facets: the judges' verdicts together ("all pass",
    "all fail", "split"), the item's category and check type, the model, the benchmark, the primary category. The
    text is empty: every attempt repeats its item's text, and near-duplicates are an item audit's concern.
    """
    benchmark_ids = list(benchmark_ids)
    health = item_health_strata(benchmark_ids)
    rows = (
        Verdict.objects.filter(
            AUDITED_JUDGES,
            attempt__run__benchmark_id__in=benchmark_ids,
            item__superseded_by__isnull=True,
            result__in=(VerdictResult.PASS, VerdictResult.FAIL),
        )
        .values_list(
            "attempt_id",
            "item_id",
            "result",
            "attempt__run__label",
            "attempt__run__model__name",
            "attempt__run__benchmark__slug",
            "attempt__instance_id",
            "attempt__instance__external_id",
            "attempt__instance__primary_category",
            "item__key",
            "item__category",
            "item__check_type",
            "item__conditional",
        )
        .order_by()
    )
    pairs: dict[tuple[int, int], list] = {}
    for attempt, item, result, run, model, slug, inst, ext, primary, key, cat, ctype, cond in rows.iterator():
        pair = pairs.get((attempt, item))
        if pair is None:
            pairs[(attempt, item)] = [set(), (run, model, slug, inst, ext, primary, key, cat, ctype, cond)]
            pair = pairs[(attempt, item)]
        pair[0].add(result)
    out = []
    for (attempt, item), (results, (run, model, slug, inst, ext, primary, key, cat, ctype, cond)) in pairs.items():
        judges = (
            JUDGES_SPLIT if len(results) > 1 else JUDGES_ALL_PASS if VerdictResult.PASS in results else JUDGES_ALL_FAIL
        )
        out.append(
            Candidate(
                key=f"{slug}/{run}/{ext}/{key}"[:700],
                instance_id=inst,
                item_id=item,
                turn=None,
                attempt_id=attempt,
                facets={
                    "judges": judges,
                    "category": cat,
                    "check_type": ctype,
                    "model": model,
                    "primary_category": primary,
                    "benchmark": slug,
                    "conditional": "conditional" if cond else "unconditional",
                    "health": health.get(item, UNFLAGGED),
                },
            )
        )
    return sorted(out, key=lambda c: c.key)


def draft_allocation(campaign: Campaign, cands: list[Candidate] | None = None) -> dict:
    """What a draft would sample: per stratum its population, share, expected (unrounded) and allocated units,
    and the strata that get none. `cands` defaults to the campaign's candidates."""
    if cands is None:
        cands = candidates(campaign.subject, campaign.benchmarks.values_list("id", flat=True))
    counts = sampling.population(cands, campaign.strata)
    options = {"mode": campaign.allocation, "minimum": campaign.minimum_per_stratum, "sd": campaign.stratum_sd}
    due = sampling.quotas(counts, campaign.size, **options)
    alloc = sampling.allocate(counts, campaign.size, **options)
    total = len(cands) or 1
    rows = [
        {
            "stratum": s,
            "population": n,
            "share": n / total,
            "expected": due[s],
            "allocated": alloc[s],
            "sd": campaign.stratum_sd.get(s) if campaign.allocation == "neyman" else None,
        }
        for s, n in counts.items()
    ]
    return {
        "rows": rows,
        "allocation": alloc,
        "n_candidates": len(cands),
        "n_sampled": sum(alloc.values()),
        "empty": sampling.empty_strata(counts, alloc),
    }


def _user_query(spec: dict, turn: int) -> str:
    for t in spec.get("turns", []):
        if t.get("turn") == turn:
            return t.get("user_query_verified") or t.get("user_query") or ""
    return ""


def unit_items(unit: AuditUnit) -> list[ChecklistItem]:
    """The checklist items a unit stands for: its item, or every constraint active at its dialogue turn."""
    if unit.item_id:
        return [unit.item]
    return list(ChecklistItem.objects.filter(instance_id=unit.instance_id, turn=unit.turn).order_by("position"))


#: characters of a verdict unit's final response shown beside its trajectory
SPEC_RESPONSE_CUT = 20_000


def unit_evidence(unit: AuditUnit) -> dict:
    """What the annotator needs to judge a unit, without any verdict: the task spec, the other items, and
    for conditional items two responses to the task, so the annotator can see whether the condition can
    be told. They are chosen without reading verdicts: which attempts a judge found the condition to apply
    to is a verdict, and a blind annotator learns none (runs.access)."""
    instance = unit.instance
    siblings = list(instance.items.exclude(id=unit.item_id).values("key", "description", "category")[:60])
    evidence = {"spec": instance.spec, "siblings": siblings, "items": unit_items(unit), "examples": []}
    if unit.turn is not None:
        evidence["query"] = _user_query(instance.spec, unit.turn)
    if unit.attempt_id:  # a verdict unit: the attempt itself is the evidence (its trajectory: audits.views)
        evidence["response"] = (
            Attempt.objects.filter(pk=unit.attempt_id).values_list("response", flat=True).first() or ""
        )[:SPEC_RESPONSE_CUT]
        return evidence
    if unit.item_id and unit.item.conditional:
        responses = Attempt.objects.filter(instance_id=instance.id).exclude(response="").order_by("id")
        for n, response in enumerate(responses.values_list("response", flat=True)[:2], 1):
            evidence["examples"].append({"label": f"Response {n} to this task", "response": response[:3000]})
    return evidence


def annotator_progress(campaign: Campaign) -> list[dict]:
    """Per annotator: labels saved, reservations held, and saved labels the final status overruled (one query)."""
    overruled = Q(label__valid=True, unit__final_status=FinalStatus.INVALID) | Q(
        label__valid=False, unit__final_status=FinalStatus.VALID
    )
    rows = (
        Assignment.objects.filter(unit__campaign=campaign)
        .values("annotator__username")
        .annotate(
            saved=Count("id", filter=Q(submitted_at__isnull=False)),
            reserved=Count("id", filter=Q(submitted_at__isnull=True)),
            overruled=Count("id", filter=overruled & Q(unit__state=UnitState.CLOSED)),
        )
        .order_by("annotator__username")
    )
    return [
        {
            "annotator": r["annotator__username"],
            "saved": r["saved"],
            "reserved": r["reserved"],
            "overruled": r["overruled"],
        }
        for r in rows
    ]


def campaign_counts(campaign: Campaign) -> dict:
    """Units per state and per final status, and labels needed vs saved."""
    states = dict(campaign.units.values_list("state").annotate(n=Count("id")).order_by())
    finals = dict(
        campaign.units.exclude(final_status="").values_list("final_status").annotate(n=Count("id")).order_by()
    )
    n_units = sum(states.values())
    saved = Label.objects.filter(assignment__unit__campaign=campaign).count()
    return {
        "units": n_units,
        "states": states,
        "finals": finals,
        "labels_saved": saved,
        "labels_needed": n_units * campaign.annotators_per_unit,
    }


def adjudication_queue(campaign: Campaign) -> list[AuditUnit]:
    """Disputed units, lowest agreement first (then sample order)."""
    return list(
        campaign.units.filter(state=UnitState.DISPUTED)
        .select_related("item", "instance")
        .order_by("agreement", "position")
    )


def provenance_totals(campaign: Campaign) -> dict[str, int]:
    """Where the campaign's units stand: closed unanimous / adjudicated / unresolved, and still open or disputed."""
    sources = dict(
        campaign.units.filter(state=UnitState.CLOSED).values_list("final_source").annotate(n=Count("id")).order_by()
    )
    states = dict(
        campaign.units.exclude(state=UnitState.CLOSED).values_list("state").annotate(n=Count("id")).order_by()
    )
    return {
        "unanimous": sources.get(FinalSource.UNANIMOUS, 0),
        "adjudicated": sources.get(FinalSource.ADJUDICATED, 0),
        "unresolved": sources.get(FinalSource.UNRESOLVED, 0),
        "disputed": states.get(UnitState.DISPUTED, 0),
        "open": states.get(UnitState.OPEN, 0),
    }


def _overruled(label_valid: bool, unit_state: str, final_status: str) -> bool | None:
    """Whether a label's verdict (valid or not) lost to the unit's final status; None while undecided or unresolved."""
    if unit_state != UnitState.CLOSED or final_status not in (FinalStatus.VALID, FinalStatus.INVALID):
        return None
    return label_valid != (final_status == FinalStatus.VALID)


def campaign_labels(campaign: Campaign) -> list[dict]:
    """Every saved label of a campaign with its provenance, in sample then slot order (leads and reviewers: callers
    check access): unit, slot, annotator, answers, note, the unit's final status and source, whether the label was
    overruled, and whether an adjudication upheld it."""
    rows = (
        Label.objects.filter(assignment__unit__campaign=campaign)
        .order_by("assignment__unit__position", "assignment__slot")
        .values_list(
            "assignment__unit_id",
            "assignment__unit__position",
            "assignment__unit__key",
            "assignment__unit__stratum",
            "assignment__slot",
            "assignment__annotator__username",
            "values",
            "valid",
            "note",
            "link",
            "created_at",
            "updated_at",
            "assignment__unit__state",
            "assignment__unit__final_status",
            "assignment__unit__final_source",
            "assignment__unit__adjudication__upheld_slot",
        )
    )
    return [
        {
            "unit": unit,
            "position": pos,
            "key": key,
            "stratum": stratum,
            "slot": slot,
            "annotator": who,
            "values": values,
            "valid": valid,
            "note": note,
            "link": link,
            "saved_at": created.isoformat(),
            "updated_at": updated.isoformat(),
            "unit_state": state,
            "final_status": final,
            "final_source": source,
            "overruled": _overruled(valid, state, final),
            "upheld": None if upheld is None else upheld == slot,
        }
        for unit, pos, key, stratum, slot, who, values, valid, note, link, created, updated, state, final, source, upheld in rows
    ]


def campaign_adjudications(campaign: Campaign) -> list[dict]:
    """Every adjudication of a campaign in sample order: unit, lead, final status, reason, upheld slot, the order the
    labels were shown in, note, when."""
    rows = (
        Adjudication.objects.filter(unit__campaign=campaign)
        .order_by("unit__position")
        .values_list(
            "unit_id",
            "unit__position",
            "unit__key",
            "unit__stratum",
            "lead__username",
            "final_status",
            "reason",
            "upheld_slot",
            "shown_order",
            "note",
            "created_at",
        )
    )
    return [
        {
            "unit": unit,
            "position": pos,
            "key": key,
            "stratum": stratum,
            "lead": lead or "",
            "final_status": final,
            "reason": reason,
            "upheld_slot": upheld,
            "shown_order": " ".join(map(str, shown or [])),
            "note": note,
            "decided_at": at.isoformat(),
        }
        for unit, pos, key, stratum, lead, final, reason, upheld, shown, note, at in rows
    ]


def sample_units(
    campaign: Campaign, *, offset: int = 0, limit: int = 200
) -> list[tuple[AuditUnit, list[ChecklistItem]]]:
    """A page of a started campaign's frozen sample in sample order, each unit with its items (three queries)."""
    units = list(campaign.units.select_related("item", "instance").order_by("position")[offset : offset + limit])
    by_turn = items_of_turns({(u.instance_id, u.turn) for u in units if not u.item_id and u.turn is not None})
    return [(u, [u.item] if u.item_id else by_turn.get((u.instance_id, u.turn), [])) for u in units]


def items_of_turns(turns: Iterable[tuple[int, int]]) -> dict[tuple[int, int], list[ChecklistItem]]:
    """The checklist items active at each (instance id, turn), in position order (one query)."""
    turns = set(turns)
    out: dict[tuple[int, int], list[ChecklistItem]] = defaultdict(list)
    if turns:
        q = Q()
        for inst, turn in turns:
            q |= Q(instance_id=inst, turn=turn)
        for item in ChecklistItem.objects.filter(q).order_by("position"):
            out[(item.instance_id, item.turn)].append(item)
    return out


def queue_progress(campaign: Campaign, user) -> dict:
    """An annotator's queue: labels saved ("done") of the units they did or may still take ("total": done, plus
    the open units they hold or that have a free slot and none of their labels). Two queries."""
    done = Label.objects.filter(assignment__unit__campaign=campaign, assignment__annotator=user).count()
    mine = Assignment.objects.filter(unit=OuterRef("pk"), annotator=user)
    labelled = Label.objects.filter(assignment__annotator=user, assignment__unit__campaign=campaign)
    open_to_me = (
        campaign.units.filter(state=UnitState.OPEN)
        .exclude(pk__in=labelled.values("assignment__unit_id"))
        .annotate(n=Count("assignments"), held=Exists(mine))
        .filter(Q(held=True) | Q(n__lt=campaign.annotators_per_unit))
        .count()
    )
    return {"done": done, "total": done + open_to_me}


def annotator_queue(user) -> list[dict]:
    """The started campaigns whose units go to the user (they are one of its assigned annotators, or it assigns
    none), those with units left for them first, then newest first, each as {"campaign", "progress"
    (`queue_progress`), "left" (units they may still take)}. Two queries per campaign and one more."""
    campaigns = (
        Campaign.objects.filter(state=CampaignState.STARTED).filter(Q(annotators=None) | Q(annotators=user)).distinct()
    )
    rows = []
    for campaign in campaigns:
        progress = queue_progress(campaign, user)
        rows.append({"campaign": campaign, "progress": progress, "left": progress["total"] - progress["done"]})
    return sorted(rows, key=lambda row: row["left"] == 0)


def last_correctable(campaign: Campaign, user) -> Label | None:
    """The user's most recent label in the campaign while its unit is still open (they may still correct it)."""
    return (
        Label.objects.filter(
            assignment__unit__campaign=campaign, assignment__annotator=user, assignment__unit__state=UnitState.OPEN
        )
        .select_related("assignment__unit__item")
        .order_by("-updated_at", "-id")
        .first()
    )


def next_disputed(campaign: Campaign, user, *, after: AuditUnit | None = None) -> AuditUnit | None:
    """The disputed unit a lead decides next, in queue order (lowest agreement first), after `after` when given,
    skipping units the lead labelled; wraps around to the start of the queue."""
    taken = units_taken_by(user, campaign)
    queue = [u for u in adjudication_queue(campaign) if u.pk not in taken]
    if after is not None:
        ids = [u.pk for u in queue]
        if after.pk in ids:
            i = ids.index(after.pk)
            queue = queue[i + 1 :] + queue[:i]
    return queue[0] if queue else None


def units_taken_by(user, campaign: Campaign) -> set[int]:
    """Ids of the campaign's units in which the user holds an annotator slot (a lead cannot adjudicate those)."""
    return set(Assignment.objects.filter(unit__campaign=campaign, annotator=user).values_list("unit_id", flat=True))


def labels_of_unit(unit: AuditUnit) -> list[Label]:
    """The saved labels of a unit in slot order (for leads and for closed units only: callers check access)."""
    return list(Label.objects.filter(assignment__unit=unit).select_related("assignment").order_by("assignment__slot"))


def shown_in_random_order(unit: AuditUnit, labels: list[Label]) -> list[Label]:
    """The labels in a random order that is stable per unit (the lead sees "Annotator 1/2", not slots)."""
    order = list(labels)
    random.Random(f"adjudication:{unit.pk}").shuffle(order)
    return order


def my_labels(user, campaign: Campaign | None = None) -> list[dict]:
    """The annotator's own labels with, for closed units only, the final status and whether it overruled them."""
    qs = (
        Label.objects.filter(assignment__annotator=user)
        .select_related("assignment__unit__campaign", "assignment__unit__item", "assignment__unit__instance")
        .order_by("-updated_at")
    )
    if campaign is not None:
        qs = qs.filter(assignment__unit__campaign=campaign)
    out = []
    for label in qs[:500]:
        unit = label.assignment.unit
        closed = unit.state == UnitState.CLOSED
        decided = closed and unit.final_status in (FinalStatus.VALID, FinalStatus.INVALID)
        out.append(
            {
                "label": label,
                "unit": unit,
                "closed": closed,
                "final_status": unit.final_status if closed else "",
                "final_source": unit.final_source if closed else "",
                "overruled": decided and label.valid != (unit.final_status == FinalStatus.VALID),
            }
        )
    return out


def item_version_chain(item: ChecklistItem) -> list[dict]:
    """Every version of a rewritten item, oldest first, as {"item", "revision"} (the ItemRevision that made
    that version; None for the first); [] for an item never rewritten. Two queries."""
    linked = {
        i.pk: i
        for i in ChecklistItem.objects.filter(instance_id=item.instance_id)
        .filter(Q(supersedes__isnull=False) | Q(superseded_by__isnull=False))
        .order_by()
    }
    if item.pk not in linked:
        return []
    first = linked[item.pk]
    for _ in linked:  # bounded walks: a chain is never longer than the linked items
        if first.supersedes_id not in linked:
            break
        first = linked[first.supersedes_id]
    newer = {i.supersedes_id: i for i in linked.values() if i.supersedes_id}
    chain = [first]
    for _ in linked:
        if chain[-1].pk not in newer:
            break
        chain.append(newer[chain[-1].pk])
    revisions = {
        r.new_item_id: r
        for r in ItemRevision.objects.filter(new_item__in=[i.pk for i in chain[1:]]).select_related("lead")
    }
    return [{"item": i, "revision": revisions.get(i.pk)} for i in chain]


# exclusion policies -----------------------------------------------------------------------
#: units of a campaign still being labelled or awaiting adjudication; a campaign with none (or closed) is settled
_PENDING = Count("units", filter=Q(units__state__in=(UnitState.OPEN, UnitState.DISPUTED)))
_SETTLED = Q(state=CampaignState.CLOSED) | Q(pending=0)


def policy_campaigns(benchmark: Benchmark, campaigns: Iterable[int] | None = None) -> list[Campaign]:
    """The campaigns an exclusion policy draws on for a benchmark, oldest first.

    By default the settled ones: started, not a pilot, and every unit closed (or the campaign
    closed by a lead). `campaigns` names them instead (any started campaign of the benchmark,
    pilots and unfinished ones included); an id that is not one raises ValueError naming it.
    """
    # a verdict audit's "not satisfied" says the attempt failed the item, not that the item is bad: never a policy's
    qs = (
        Campaign.objects.filter(benchmarks=benchmark)
        .exclude(state=CampaignState.DRAFT)
        .exclude(subject=Subject.VERDICT)
    )
    if campaigns is not None:
        wanted = {int(c) for c in campaigns}
        chosen = list(qs.filter(pk__in=wanted).order_by("created_at", "id"))
        missing = wanted - {c.pk for c in chosen}
        if missing:
            raise ValueError(
                f"not a started audit campaign of {benchmark.slug}: {', '.join(map(str, sorted(missing)))}"
            )
        return chosen
    return list(qs.filter(pilot=False).annotate(pending=_PENDING).filter(_SETTLED).order_by("created_at", "id"))


def campaigns_not_read(benchmark: Benchmark, policy: str, campaigns: Iterable[int] | None = None) -> list[dict]:
    """The started campaigns of a benchmark whose decisions a label-based policy leaves out (`policy_campaigns` reads
    the others), oldest first, each as {"campaign", "pending" (units still being labelled or awaiting
    adjudication), "why" (in words)}; none for "superseded", which reads no label."""
    if policy == "superseded":
        return []
    read = [c.pk for c in policy_campaigns(benchmark, campaigns)]
    rows = []
    for c in (
        Campaign.objects.filter(benchmarks=benchmark)
        .exclude(state=CampaignState.DRAFT)
        .exclude(subject=Subject.VERDICT)
        .exclude(pk__in=read)
        .annotate(pending=_PENDING)
        .order_by("created_at", "id")
    ):
        if campaigns is not None:
            why = "not ticked"
        elif c.pilot:
            why = "a pilot"
        else:
            why = f"{c.pending} unit{'s' if c.pending != 1 else ''} still being labelled or awaiting adjudication"
        rows.append({"campaign": c, "pending": c.pending, "why": why})
    return rows


def campaign_policy_reading(campaign: Campaign) -> dict:
    """Whether exclusion policies read a campaign's decisions by default: {"campaign", "settled" (they do), "pilot",
    "pending" (units still being labelled or awaiting adjudication), "benchmarks" (its checklist benchmarks, whose
    effect page reads it when it is ticked there)}."""
    one = Campaign.objects.filter(pk=campaign.pk).annotate(pending=_PENDING)
    return {
        "campaign": campaign,
        "settled": one.filter(_SETTLED, pilot=False).exists(),
        "pilot": campaign.pilot,
        "pending": one.values_list("pending", flat=True).get(),
        "benchmarks": list(campaign.benchmarks.filter(kind=BenchmarkKind.CHECKLIST).order_by("slug")),
    }


def flagged_units(benchmark: Benchmark, policy: str, campaigns: Iterable[int] | None = None) -> list[AuditUnit]:
    """The audit units of a benchmark that a label-based policy excludes (see POLICIES; "superseded" has no units),
    from the campaigns `policy_campaigns` gives."""
    if policy not in POLICIES or policy == "superseded":
        raise ValueError(f"unknown exclusion policy {policy!r}")
    units = AuditUnit.objects.filter(instance__benchmark=benchmark, campaign__in=policy_campaigns(benchmark, campaigns))
    if policy == "adjudicated_invalid":
        return list(units.filter(state=UnitState.CLOSED, final_status=FinalStatus.INVALID))
    flagged = Count("assignments", filter=Q(assignments__label__valid=False))
    units = units.annotate(n_flagged=flagged)
    minimum = 1 if policy == "flagged_by_either" else 2
    return list(units.filter(n_flagged__gte=minimum))


def excluded_item_ids(benchmark: Benchmark, policy: str, campaigns: Iterable[int] | None = None) -> set[int]:
    """Checklist item ids that an exclusion policy leaves out of the benchmark's leaderboard (empty without audits).

    Label-based policies read the settled campaigns, or the ones `campaigns` names (see `policy_campaigns`);
    "superseded" leaves out every item an audit rewrote as a newer version (the newest stays).
    """
    if policy == "superseded":
        return set(
            ChecklistItem.objects.filter(instance__benchmark=benchmark, superseded_by__isnull=False).values_list(
                "id", flat=True
            )
        )
    units = flagged_units(benchmark, policy, campaigns)
    ids = {u.item_id for u in units if u.item_id}
    for items in items_of_turns(
        (u.instance_id, u.turn) for u in units if not u.item_id and u.turn is not None
    ).values():
        ids |= {i.id for i in items}
    return ids


def policy_sources(benchmark: Benchmark, policy: str, campaigns: Iterable[int] | None = None) -> str:
    """In words, what a policy draws on for this benchmark (pages show it beside the policy)."""
    if policy == "superseded":
        return "items rewritten by any audit"
    chosen = policy_campaigns(benchmark, campaigns)
    kind = "chosen" if campaigns is not None else "settled"
    if not chosen:
        return f"no {kind} audit campaign (pilots and unfinished campaigns count only when chosen)"
    names = ", ".join(f"{c.name}{' (pilot)' if c.pilot else ''}" for c in chosen)
    return f"{len(chosen)} {kind} campaign{'s' if len(chosen) != 1 else ''}: {names}"


def items_by_id(ids: Iterable[int]) -> dict[int, ChecklistItem]:
    """Items with their instance, by id."""
    return {i.id: i for i in ChecklistItem.objects.filter(id__in=list(ids)).select_related("instance")}


def attempt_verdicts_on(
    item_ids: Iterable[int], benchmark_id: int, filters=None
) -> dict[str, dict[int, dict[str, int]]]:
    """For each model: item id -> {"pass": n, "fail": n} of its verdicts on these items (for the swap explanation),
    limited to the runs, judges, scaffolds and primary categories of a leaderboard's `filters` when given."""
    out: dict[str, dict[int, dict[str, int]]] = defaultdict(lambda: defaultdict(lambda: {"pass": 0, "fail": 0}))
    verdicts = Verdict.objects.filter(item_id__in=list(item_ids), attempt__run__benchmark_id=benchmark_id)
    for values, lookup in (
        (getattr(filters, "runs", ()), "attempt__run__label__in"),
        (getattr(filters, "judges", ()), "judge__name__in"),
        (getattr(filters, "scaffolds", ()), "attempt__instance__scaffold__in"),
        (getattr(filters, "primary_categories", ()), "attempt__instance__primary_category__in"),
    ):
        if values:
            verdicts = verdicts.filter(**{lookup: list(values)})
    rows = (
        verdicts.exclude(result=VerdictResult.NOT_APPLICABLE)
        .values_list("attempt__run__model__name", "item_id", "result")
        .annotate(n=Count("id"))
        .order_by()
    )
    for model, item_id, result, n in rows:
        out[model][item_id][result] += n
    return out


def policy_effect(benchmark: Benchmark, policy: str, filters=None, campaigns: Iterable[int] | None = None):
    """A checklist leaderboard before and after a policy (audits.effect.exclusion_effect) and the items behind
    its swaps by id: what the effect page and its API show."""
    excluded = excluded_item_ids(benchmark, policy, campaigns)
    result = effect.exclusion_effect(
        benchmark.id, excluded, attempt_verdicts_on(excluded, benchmark.id, filters), filters=filters
    )
    return result, items_by_id({d["item_id"] for s in result.swaps for d in s.items})


def unit_verdict_counts(unit) -> dict[str, int]:
    """How many verdicts of each result the judges gave the unit's items (shown to whoever may see verdicts)."""
    verdicts = Verdict.objects.filter(item__in=unit_items(unit))
    if unit.attempt_id:  # a verdict unit: the judges' verdicts on its attempt only
        verdicts = verdicts.filter(attempt_id=unit.attempt_id)
    rows = verdicts.values_list("result").annotate(n=Count("id"))
    return {VerdictResult(r).label: n for r, n in rows.order_by("result")}


def unit_judge_verdicts(unit: AuditUnit) -> list[Verdict]:
    """A verdict unit's verdicts, one per judge, with their reasoning (leads, reviewers and settled units: callers
    check `audits.access.may_see_verdicts`); [] for any other unit."""
    if not unit.attempt_id or not unit.item_id:
        return []
    return list(
        Verdict.objects.filter(attempt_id=unit.attempt_id, item_id=unit.item_id)
        .select_related("judge")
        .order_by("judge__name")
    )
