"""Audit pages: campaigns, the keyboard-first labelling screen, adjudication, agreement, effect on leaderboards.

Every access decision goes through audits.access; views parse, check, call one
selector or service, render.
"""

from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.html import escape
from django.views.decorators.http import require_POST

from audits import access, calibration, exports, sampling, selectors, services
from audits.agreement import campaign_agreement
from audits.forms import (
    AdjudicationForm,
    CampaignAnnotatorsForm,
    CampaignForm,
    EffectForm,
    ItemRewriteForm,
    label_form_class,
)
from audits.models import Campaign, CampaignState, Subject, UnitState
from audits.rubrics import rubric_for
from runs import search, trajectory_view
from runs.access import blind_safe
from runs.models import Benchmark, BenchmarkKind
from runs.pages import render_page
from runs.querystring import query_with
from runs.selectors.checklist import checklist_query

SPEC_CUT = 20_000  # characters of one spec field shown on the labelling screen
CAMPAIGN_POLL_SECONDS = 10  # how often a started campaign's page refreshes its counts
#: spec fields an annotator reads first (the instruction sources), the rest follow by name
SPEC_FIRST = ("system_prompt", "user_query", "prompt", "instructions", "turns", "interface", "task", "guidelines")


@blind_safe
@login_required
def campaign_list(request):
    """The campaigns the user may open, with their progress."""
    campaigns = access.campaigns_for_user(request.user).prefetch_related("benchmarks")
    rows = [(c, access.campaign_counts_for(request.user, selectors.campaign_counts(c))) for c in campaigns[:100]]
    return render(
        request,
        "audits/campaign_list.html",
        {
            "rows": rows,
            "is_lead": access.is_lead(request.user),
            "roles": access.roles_of(request.user),
            "sees_all": access.can_see_all(request.user),
        },
    )


@login_required
def campaign_create(request):
    """A lead creates a draft campaign; the sample is drawn when it starts."""
    access.require_lead(request.user)
    # a link may propose the subject, benchmarks and strata (the item health page's "Audit these")
    proposed = {k: request.GET.getlist(k) for k in ("strata", "benchmarks") if k in request.GET}
    proposed.update({k: request.GET[k] for k in ("name", "subject") if k in request.GET})
    form = CampaignForm(request.POST or None, initial=proposed)
    if request.method == "POST" and form.is_valid():
        try:
            campaign = services.campaign_create(user=request.user, **form.cleaned_data)
        except services.AuditError as exc:
            form.add_error(None, str(exc))
        else:
            return redirect("audits:campaign", pk=campaign.pk)
    return render(request, "audits/campaign_form.html", {"form": form})


@blind_safe
@login_required
def campaign_detail(request, pk):
    """A draft's population, allocation and near-duplicates; a started campaign's progress and links, whose counts
    (the htmx fragment `live`) poll while labels are still to come or units wait for a decision."""
    campaign = access.campaign_for_user(request.user, pk)
    counts = access.campaign_counts_for(request.user, selectors.campaign_counts(campaign))
    context = {
        "campaign": campaign,
        "counts": counts,
        "is_lead": access.is_lead(request.user),
        "sees_all": access.can_see_all(request.user),
        "strata_labels": sampling.STRATA,
        "may_label": services.may_receive(campaign, request.user),
        "poll_seconds": CAMPAIGN_POLL_SECONDS,
        # from the counts the user may see, so whether the page polls tells an annotator nothing more
        "changing": campaign.state == CampaignState.STARTED
        and (
            counts["labels_saved"] < counts["labels_needed"] or bool(counts.get("states", {}).get(UnitState.DISPUTED))
        ),
    }
    if campaign.state == CampaignState.DRAFT:
        context.update(_draft_preview(campaign))
    else:
        if context["may_label"]:
            context["queue"] = selectors.queue_progress(campaign, request.user)
        if context["sees_all"]:
            context.update(
                progress=selectors.annotator_progress(campaign), provenance=selectors.provenance_totals(campaign)
            )
    if request.htmx and campaign.state != CampaignState.DRAFT:
        return render(request, "audits/campaign_detail.html#live", context)
    if context["is_lead"]:
        context["annotators_form"] = CampaignAnnotatorsForm(initial={"annotators": campaign.annotators.all()})
    return render(request, "audits/campaign_detail.html", context)


@login_required
@require_POST
def campaign_pilot(request, pk):
    """A lead marks the campaign as a pilot (`pilot=1`) or as a real audit (anything else)."""
    access.require_lead(request.user)
    campaign = access.campaign_for_user(request.user, pk)
    services.campaign_set_pilot(campaign, request.POST.get("pilot") == "1")
    messages.success(
        request,
        "Marked as a pilot: exclusion policies leave it out unless chosen."
        if campaign.pilot
        else "Marked as a real audit: exclusion policies read it once every unit is closed.",
    )
    return redirect("audits:campaign", pk=campaign.pk)


@login_required
@require_POST
def campaign_annotators(request, pk):
    """A lead chooses who receives the campaign's units."""
    access.require_lead(request.user)
    campaign = access.campaign_for_user(request.user, pk)
    form = CampaignAnnotatorsForm(request.POST)
    if form.is_valid():
        try:
            services.campaign_assign(campaign, form.cleaned_data["annotators"])
        except services.AuditError as exc:
            messages.error(request, str(exc))
        else:
            names = ", ".join(sorted(u.get_username() for u in form.cleaned_data["annotators"])) or "every annotator"
            messages.success(request, f"Units now go to {names}.")
    else:
        messages.error(request, "Choose annotators from the list.")
    return redirect("audits:campaign", pk=campaign.pk)


def _draft_preview(campaign: Campaign) -> dict:
    cands = selectors.candidates(campaign.subject, campaign.benchmarks.values_list("id", flat=True))
    dups = sampling.near_duplicates(cands)
    return {
        "draft": selectors.draft_allocation(campaign, cands),
        "near_duplicates": dups[:200],
        "n_near_duplicates": len(dups),
        "neyman_default_sd": sampling.NEYMAN_DEFAULT_SD,
    }


@login_required
@require_POST
def campaign_start(request, pk):
    """Freeze the sample (leads)."""
    access.require_lead(request.user)
    campaign = access.campaign_for_user(request.user, pk)
    try:
        services.campaign_start(campaign)
    except services.AuditError as exc:
        messages.error(request, str(exc))
    return redirect("audits:campaign", pk=pk)


@blind_safe
@login_required
def label(request, pk):
    """The labelling screen. GET shows the reservation the annotator holds and never reserves; POST reserves the
    next unit (or keeps the held one), then shows it: `fragment=1` answers only the unit, for the labelling script."""
    access.require_annotator(request.user)
    campaign = access.campaign_for_user(request.user, pk)
    if request.method == "POST":
        services.assignment_next(campaign, request.user)
        if not request.POST.get("fragment"):
            return redirect("audits:label", pk=campaign.pk)
    return _label_page(request, campaign, fragment=request.method == "POST")


def _label_page(request, campaign, *, fragment: bool, correcting=None):
    """The labelling screen (or its unit fragment) for the reservation the user holds, or a label being corrected."""
    assignment = correcting or services.assignment_held(campaign, request.user)
    context = {
        "campaign": campaign,
        "assignment": assignment,
        "correcting": correcting is not None,
        "progress": selectors.queue_progress(campaign, request.user),
        "receives": services.may_receive(campaign, request.user),
        "last": selectors.last_correctable(campaign, request.user),
    }
    if assignment:
        label = getattr(assignment, "label", None) if correcting is not None else None
        context.update(
            _label_context(
                assignment, initial={**label.values, "note": label.note, "link": label.link} if label else None
            )
        )
        context.update(_trajectory_context(request, assignment.unit))
        context["stratum"] = access.stratum_for(request.user, assignment.unit)
        if request.htmx and request.GET.get("page") and context.get("trajectory"):
            return render(request, "runs/partials/_units.html", context)  # the next window of the trajectory
    return render(request, "audits/label.html#unit" if fragment else "audits/label.html", context)


def _trajectory_context(request, unit) -> dict:
    """A verdict unit's attempt in the portal's trajectory viewer (one window of one thread, a find within it, a jump
    to a message), from the page's query; {} for any other unit. Messages only: no verdict is read."""
    if not unit.attempt_id:
        return {}
    view = trajectory_view.thread_page(
        trajectory_view.attempt_threads(unit.attempt_id),
        thread=request.GET.get("thread"),
        q=request.GET.get("q", ""),
        page=request.GET.get("page"),
        at=request.GET.get("at"),
        find=search.ThreadFind,
    )
    return {
        "trajectory": True,
        **view,
        "cut": trajectory_view.CUT,
        "query": query_with(request, page=None, at=None),
        "text_url": reverse("audits:unit-text", args=[unit.pk]),
    }


@blind_safe  # the unit is one the user may open (audits.access); the answer is a message's text, never a verdict
@login_required
def unit_text(request, pk):
    """The full text of one long part of a message of a verdict unit's trajectory (thread, msg, field), escaped."""
    unit = access.unit_for_user(request.user, pk)  # 404 for a unit the user may not open
    if not unit.attempt_id:
        return HttpResponseBadRequest("This unit is an item, not an attempt: it has no trajectory.")
    try:
        text = trajectory_view.message_part(
            trajectory_view.attempt_threads(unit.attempt_id),
            request.GET.get("thread"),
            request.GET.get("msg"),
            request.GET.get("field", ""),
        )
    except LookupError:
        return HttpResponseBadRequest("No such message: give thread, msg and field of a message of this trajectory.")
    return HttpResponse(f'<pre class="msg-text">{escape(text)}</pre>')


def _label_context(assignment, *, initial=None) -> dict:
    unit = assignment.unit
    rubric = rubric_for(unit.campaign.subject)
    form = label_form_class(rubric, with_link=unit.campaign.subject == Subject.CHECKLIST)(initial=initial)
    return {"unit": unit, "rubric": rubric, "form": form, **_evidence_context(unit)}


def _evidence_context(unit) -> dict:
    """What an annotator sees of a unit (no verdict): the task spec (instruction sources first), the items, siblings."""
    evidence = selectors.unit_evidence(unit)
    first = {k: n for n, k in enumerate(SPEC_FIRST)}
    keys = sorted(evidence["spec"], key=lambda k: (first.get(k, len(first)), k))
    spec = [
        (k, v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, indent=1))
        for k, v in ((k, evidence["spec"][k]) for k in keys)
    ]
    return {"evidence": evidence, "spec": [(k, v[:SPEC_CUT], len(v) > SPEC_CUT) for k, v in spec]}


@blind_safe  # an annotator acts on their own held unit (audits.access checks it)
@login_required
@require_POST
def assignment_skip(request, pk):
    """Put the held unit back and take the next one (`fragment=1`: answer only the unit, for the labelling script)."""
    assignment = access.assignment_for_annotator(request.user, pk)
    campaign = assignment.unit.campaign
    try:
        services.assignment_release(assignment)
    except services.AuditError as exc:
        messages.error(request, str(exc))
    services.assignment_next(campaign, request.user)
    if request.POST.get("fragment"):
        return _label_page(request, campaign, fragment=True)
    return redirect("audits:label", pk=campaign.pk)


@blind_safe  # an annotator acts on their own held unit (audits.access checks it)
@login_required
@require_POST
def assignment_release(request, pk):
    """Put the held unit back for others without taking another one (stop for now)."""
    assignment = access.assignment_for_annotator(request.user, pk)
    try:
        services.assignment_release(assignment)
    except services.AuditError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, "Put back: the unit is free for the other annotators.")
    return redirect("audits:label", pk=assignment.unit.campaign_id)


@blind_safe  # an annotator acts on their own held unit (audits.access checks it)
@login_required
def assignment_correct(request, pk):
    """The user's saved label, prefilled, to correct while its unit is still open."""
    assignment = access.assignment_for_annotator(request.user, pk)
    if not hasattr(assignment, "label"):
        return redirect("audits:label", pk=assignment.unit.campaign_id)
    if assignment.unit.state != UnitState.OPEN:
        messages.error(
            request, "This unit has settled (every annotator labelled it), so your label can no longer change."
        )
        return redirect("audits:label", pk=assignment.unit.campaign_id)
    return _label_page(request, assignment.unit.campaign, fragment=False, correcting=assignment)


@blind_safe
@login_required
@require_POST
def label_save(request, pk):
    """Save the label of the user's own assignment; JSON for the labelling script, a redirect otherwise."""
    assignment = access.assignment_for_annotator(request.user, pk)
    rubric = rubric_for(assignment.unit.campaign.subject)
    form = label_form_class(rubric, with_link=assignment.unit.campaign.subject == Subject.CHECKLIST)(request.POST)
    wants_json = "application/json" in request.headers.get("Accept", "")
    error = None
    if form.is_valid():
        data = dict(form.cleaned_data)
        note, link = data.pop("note", ""), data.pop("link", "")
        try:
            services.label_submit(assignment, data, note=note, link=link, correct=bool(request.POST.get("correct")))
        except services.AuditError as exc:
            error = str(exc)
    else:
        error = "Choose an answer for every question."
    if wants_json:
        return JsonResponse({"saved": error is None, "error": error}, status=200 if error is None else 400)
    if error:
        messages.error(request, error)
    elif request.POST.get("correct"):
        messages.success(request, "Label corrected.")
    return redirect("audits:label", pk=assignment.unit.campaign_id)


@login_required
def adjudication_queue(request, pk):
    """Disputed units of a campaign, lowest agreement first (leads)."""
    access.require_lead(request.user)
    campaign = access.campaign_for_user(request.user, pk)
    return render(
        request,
        "audits/adjudication_queue.html",
        {
            "campaign": campaign,
            "units": selectors.adjudication_queue(campaign),
            "taken": selectors.units_taken_by(request.user, campaign),
            "reading": selectors.campaign_policy_reading(campaign),
        },
    )


@login_required
def adjudicate(request, pk):
    """A lead decides a disputed unit; the labels are shown as Annotator 1/2 in a random order."""
    unit = access.unit_for_lead(request.user, pk)
    rubric = rubric_for(unit.campaign.subject)
    shown = selectors.shown_in_random_order(unit, selectors.labels_of_unit(unit))
    form = AdjudicationForm(request.POST or None, rubric=rubric, shown=len(shown))
    if request.method == "POST" and form.is_valid():
        upheld = form.cleaned_data["upheld"]
        slot = shown[int(upheld) - 1].assignment.slot if upheld else None
        try:
            services.unit_adjudicate(
                unit,
                lead=request.user,
                final_status=form.cleaned_data["final_status"],
                reason=form.cleaned_data["reason"],
                upheld_slot=slot,
                note=form.cleaned_data["note"],
                shown_order=[lab.assignment.slot for lab in shown],
            )
        except services.AuditError as exc:
            messages.error(request, str(exc))
            return redirect("audits:adjudicate", pk=unit.pk)
        following = selectors.next_disputed(unit.campaign, request.user, after=unit)
        if following is None:
            messages.success(request, "Decision recorded. No disputed unit is left for you.")
            return redirect("audits:campaign-adjudicate", pk=unit.campaign_id)
        messages.success(request, "Decision recorded; here is the next disputed unit.")
        return redirect("audits:adjudicate", pk=following.pk)
    following = selectors.next_disputed(unit.campaign, request.user, after=unit)
    return render(
        request,
        "audits/adjudicate.html",
        {
            "unit": unit,
            "rubric": rubric,
            "shown": shown,
            "form": form,
            "items": selectors.unit_items(unit),
            "taken": unit.pk in selectors.units_taken_by(request.user, unit.campaign),
            "next_unit": following if following is not None and following.pk != unit.pk else None,
            **_evidence_context(unit),
            "verdicts": selectors.unit_verdict_counts(unit),
            "judge_verdicts": selectors.unit_judge_verdicts(unit),
            "status_labels": dict(rubric.status_labels),
            **_trajectory_context(request, unit),
            "reading": selectors.campaign_policy_reading(unit.campaign),
            **_rewrite_context(request.user, unit, back="adjudicate"),
        },
    )


@blind_safe
@login_required
def unit_detail(request, pk):
    """One unit as the user may see it: annotators see their own label only, others' (anonymous) once closed."""
    unit = access.unit_for_user(request.user, pk)
    context = {**_unit_context(request.user, unit), **_trajectory_context(request, unit)}
    if request.htmx and request.GET.get("page") and context.get("trajectory"):
        return render(request, "runs/partials/_units.html", context)
    return render(request, "audits/unit.html", context)


def _unit_context(user, unit, rewrite_form=None) -> dict:
    labels = selectors.labels_of_unit(unit)
    if not access.may_see_other_labels(user, unit):
        labels = [lab for lab in labels if lab.assignment.annotator_id == user.id]
    context = {
        "unit": unit,
        "labels": labels,
        "identities": access.may_see_identities(user),
        "state_label": access.unit_state_for(user, unit)[1],
        "items": selectors.unit_items(unit),
        "rubric": rubric_for(unit.campaign.subject),
        **_rewrite_context(user, unit, rewrite_form, back="unit"),
    }
    context["stratum"] = access.stratum_for(user, unit)
    if access.may_see_verdicts(user, unit):
        context["verdicts"] = selectors.unit_verdict_counts(unit)
        context["judge_verdicts"] = selectors.unit_judge_verdicts(unit)
    return context


def _rewrite_context(user, unit, form=None, *, back: str) -> dict:
    """The unit's item versions (for those who may see the unit's outcome) and, for a lead, the rewrite form
    while the item is the newest version (or a refused submission, with what was typed)."""
    if unit.item_id is None or not access.may_see_other_labels(user, unit):
        return {}
    versions = selectors.item_version_chain(unit.item)
    newest = versions[-1]["item"] if versions else unit.item
    if form is None and access.is_lead(user) and newest.pk == unit.item_id:
        form = ItemRewriteForm(
            initial={
                "description": unit.item.description,
                "check_type": unit.item.check_type,
                "category": unit.item.category_original or unit.item.category,
                "back": back,
            }
        )
    return {"versions": versions, "rewrite_form": form, "next_version": unit.item.version + 1}


@login_required
@require_POST
def unit_item_rewrite(request, pk):
    """A lead rewrites the unit's item as a new version; a refused rewrite shows the unit page with the typed text."""
    unit = access.unit_for_lead(request.user, pk)
    if unit.item_id is None:
        raise Http404("This unit is a dialogue turn, not one item: rewrite its items through the API.")
    form = ItemRewriteForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        try:
            new = services.item_rewrite(
                item=unit.item,
                lead=request.user,
                description=data["description"],
                check_type=data["check_type"],
                category=data["category"],
                reason=data["reason"],
                unit=unit,
            )
        except services.AuditError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Saved the rewrite as v{new.version} ({new.key}).")
            if data["back"] == "adjudicate" and unit.state == UnitState.DISPUTED:
                return redirect("audits:adjudicate", pk=unit.pk)
            return redirect("audits:unit", pk=unit.pk)
    return render(request, "audits/unit.html", _unit_context(request.user, unit, rewrite_form=form))


@login_required
def agreement(request, pk):
    """Agreement per criterion, per stratum and overall; valid rates with Wilson intervals (leads, reviewers)."""
    campaign = access.campaign_for_user(request.user, pk)
    if not access.can_see_all(request.user):
        raise PermissionDenied("Agreement figures are for leads and reviewers.")
    return render(
        request,
        "audits/agreement.html",
        {
            "campaign": campaign,
            "figures": campaign_agreement(campaign),
            "progress": selectors.annotator_progress(campaign),
            "is_lead": access.is_lead(request.user),
        },
    )


@blind_safe
@login_required
def mine(request):
    """The user's queue (the campaigns that give them units, with what is left) and their own labels; for closed
    units the final status and whether it overruled them."""
    queue = (
        selectors.annotator_queue(request.user)
        if access.roles_of(request.user) & {access.LEAD, access.ANNOTATOR}
        else []
    )
    return render(request, "audits/mine.html", {"rows": selectors.my_labels(request.user), "queue": queue})


def queue_url(user) -> str:
    """Where an annotator starts: the labelling screen of the one campaign with units left for them, else their
    queue (several campaigns to choose from, or none)."""
    waiting = [row["campaign"] for row in selectors.annotator_queue(user) if row["left"]]
    if len(waiting) == 1:
        return reverse("audits:label", kwargs={"pk": waiting[0].pk})
    return reverse("audits:mine")


@login_required
def effect(request, slug):
    """A checklist leaderboard before and after an exclusion policy: scores, ranks, Kendall's tau, items behind swaps."""
    benchmark = get_object_or_404(Benchmark, slug=slug, kind=BenchmarkKind.CHECKLIST)
    form = EffectForm(request.GET or None, benchmark=benchmark)
    form.is_valid()  # a bad field (shown with its error) leaves the others as chosen
    chosen = getattr(form, "cleaned_data", {})
    policy = chosen.get("exclude") or "adjudicated_invalid"
    campaigns = chosen.get("campaigns") or None
    # the leaderboard's filters (runs, judges, scaffolds, primary categories) carry over from its link
    filters = checklist_query(benchmark, request.GET).state["filters"]
    result, items = selectors.policy_effect(benchmark, policy, filters, campaigns)
    filtered = any((filters.runs, filters.judges, filters.scaffolds, filters.primary_categories))
    keep = request.GET.copy()
    keep.pop("exclude", None)
    return render_page(
        request,
        "audits/effect.html",
        {
            "benchmark": benchmark,
            "form": form,
            "policy": policy,
            "policies": selectors.POLICIES,
            "effect": result,
            "policy_label": selectors.POLICIES.get(policy, policy),
            "items": items,
            "filters": filters if filtered else None,
            "keep": keep.urlencode(),
            "sources": selectors.policy_sources(benchmark, policy, campaigns),
            "not_read": selectors.campaigns_not_read(benchmark, policy, campaigns),
            "benchmarks": Benchmark.objects.filter(kind=BenchmarkKind.CHECKLIST),
        },
        page_data=exports.effect_page,
        fragment=None,
    )


@login_required
def judge_accuracy(request, pk):
    """How often each judge is right against a verdict audit's closed units (leads and reviewers): figures with 95%
    intervals overall, per category and per model, and the units where judge and humans disagree."""
    access.require_overseer(request.user)
    campaign = access.campaign_for_user(request.user, pk)
    if campaign.subject != Subject.VERDICT:
        return render(request, "audits/judge_accuracy.html", {"campaign": campaign, "not_verdicts": True})
    return render_page(
        request,
        "audits/judge_accuracy.html",
        {
            "campaign": campaign,
            "page": calibration.judge_accuracy_page(campaign),
            # a share link belongs to a benchmark: the campaign's first
            "benchmark": campaign.benchmarks.order_by("slug").first(),
        },
        page_data=exports.judge_accuracy_page,
        fragment=None,
    )


@login_required
def calibrated(request, slug):
    """A checklist leaderboard calibrated by a settled verdict audit (`campaign`, the newest settled one by default):
    per model and judge the raw and calibrated ISR and CSR, and each judge's ranking beside the calibrated one."""
    benchmark = get_object_or_404(Benchmark, slug=slug, kind__in=selectors.SUBJECT_KINDS[Subject.VERDICT])
    campaigns = calibration.verdict_campaigns(benchmark)
    asked = request.GET.get("campaign", "")
    chosen = calibration.settled_verdict_campaign(benchmark, asked)
    page = calibration.calibrated_page(benchmark, chosen)
    return render_page(
        request,
        "audits/calibrated.html",
        {
            "benchmark": benchmark,
            "campaigns": campaigns,
            "asked": asked,
            "chosen": chosen,
            "page": page,
            "rows": exports.calibrated_rows(page),
            "rankings": exports.ranking_rows(page),
            "small_audit": calibration.SMALL_AUDIT,
            "is_lead": access.is_lead(request.user),
        },
        page_data=exports.calibrated_page,
        fragment=None,
    )
