"""Checklist-benchmark pages: leaderboard, drill-down, attempt with trajectory viewer, instance, analyses."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.html import escape

from runs import search, selectors, trajectory_view
from runs.access import attempt_for, benchmark_for, blind_safe, instance_for
from runs.cache import cached, generation_seen
from runs.charts import checklist as charts
from runs.exports import checklist as exports
from runs.leaderboard_page import TEMPLATE as LEADERBOARD_TEMPLATE
from runs.leaderboard_page import full_page, results_html
from runs.metrics import checklist as metrics
from runs.metrics.checklist import GROUPINGS
from runs.models import Attempt, Benchmark, BenchmarkKind, Verdict
from runs.pages import frame_response, page_tools, render_page, swap_response
from runs.querystring import query_with
from runs.selectors import checklist as checklist_selector
from runs.selectors import sides
from runs.selectors.attempts import attempt_verdict_diff
from runs.selectors.checklist import checklist_query, state_digest

ATTEMPTS_PAGE = 50


def _benchmark(request, slug: str) -> Benchmark:
    """The checklist benchmark with this slug, or 404."""
    return benchmark_for(request, slug, kind=BenchmarkKind.CHECKLIST)


def _attempt(request, pk: int) -> Attempt:
    """An attempt of a checklist (or OctoBench-Conflict) benchmark with its run, model and instance, or 404."""
    return attempt_for(request, pk, kinds=(BenchmarkKind.CHECKLIST, BenchmarkKind.CONFLICT))


# leaderboard ---------------------------------------------------------------------------
@blind_safe
@login_required
def leaderboard(request, slug):
    """ISR/CSR per model (mean ± std across judges), or a model x group matrix; filters in the URL.

    Exports and snapshots go through the frame (runs.pages) like every page's. The #results fragment
    and the filter form come rendered from the cache (runs.leaderboard_page); the page renders only
    the shell around them (header, the frame's toolbar) or reads the whole page from the cache with its CSRF token
    filled in (runs.leaderboard_page.full_page), and an htmx swap brings the toolbar of the new state out of band
    (runs.pages.swap_response)."""
    benchmark = _benchmark(request, slug)
    generation_seen(benchmark)  # read just now, before any data: the cached parts need no query for it
    # an unknown run, judge or exclusion policy is said (in the API's words), not passed over
    parsed = checklist_query(benchmark, request.GET)
    state, notes = parsed.state, parsed.notes
    if notes and request.GET.get("export"):  # a table has no room for the note: its file is refused with it
        return HttpResponse("\n".join(notes), status=400, content_type="text/plain; charset=utf-8")
    framed = frame_response(request, {"benchmark": benchmark, "state": state}, page_data=exports.leaderboard_page)
    if framed is not None:
        return framed
    tools = page_tools(request, exports.leaderboard_page, state=parsed.params)  # the state, not the query
    if request.htmx:  # the cached #results, the notes on the new query and the frame's toolbar, out of band
        said = render_to_string(f"{LEADERBOARD_TEMPLATE}#query-notes", {"query_notes": notes, "oob": True}, request)
        return swap_response(
            request, results_html(parsed, request=request) + said, {"benchmark": benchmark, "page_tools": tools}
        )
    context = {"benchmark": benchmark, "query": parsed.params.urlencode(), "page_tools": tools, "query_notes": notes}
    return HttpResponse(full_page(request, parsed, context))


# drill-down ----------------------------------------------------------------------------
@login_required
def attempts(request, slug):
    """The attempts behind one leaderboard cell (model, and group when grouped), failing first."""
    benchmark = _benchmark(request, slug)
    parsed = checklist_query(benchmark, request.GET)
    state, form = parsed.state, parsed.form
    model, group = request.GET.get("model", ""), request.GET.get("group")
    rows = checklist_selector.drilldown_rows(benchmark.id, state["filters"], model=model, by=state["by"], group=group)
    page = Paginator(rows, ATTEMPTS_PAGE).get_page(request.GET.get("page"))
    checklist_selector.attach_failing_items(
        page.object_list, by=state["by"], group=group, judges=state["filters"].judges
    )
    cell = [("model", model), *((("by", state["by"]), ("group", group)) if group is not None else ())]
    context = {
        "benchmark": benchmark,
        "form": form,
        "model": model,
        "group": group,
        "state": state,
        "page": page,
        "rows": rows,
        "cell": cell,
        "heading": f"{model} · {GROUPINGS[state['by']]}: {group}" if group else model,
        "by_label": GROUPINGS[state["by"]],
        "n_failing": sum(r.failing for r in rows),
        "query": query_with(request, page=None),
        "back": query_with(request, model=None, group=None, page=None),
    }
    return render_page(
        request, "runs/checklist/attempts.html", context, page_data=exports.attempts_page, fragment="rows"
    )


# attempt and trajectory ----------------------------------------------------------------
@login_required
def attempt(request, pk):
    """One attempt: trajectory (one thread, one page of it) beside every judge's verdicts, failures first."""
    attempt = _attempt(request, pk)
    view = trajectory_view.thread_page(
        trajectory_view.attempt_threads(attempt.id),
        thread=request.GET.get("thread"),
        q=request.GET.get("q", ""),
        page=request.GET.get("page"),
        at=request.GET.get("at"),
        find=search.ThreadFind,
    )
    context = {"attempt": attempt, **view, "cut": trajectory_view.CUT, "query": query_with(request, page=None, at=None)}
    if request.htmx and request.GET.get("page"):
        return render(request, "runs/checklist/attempt.html#units", context)
    context["items"] = checklist_selector.attempt_checklist(attempt.id, reasoning_cut=trajectory_view.CUT)
    context["reports"] = judge_reports(attempt.id)
    context["harness"] = metrics.harness_log(attempt.outcome)
    context["others"] = (
        Attempt.objects.filter(instance_id=attempt.instance_id)
        .exclude(pk=attempt.pk)
        .select_related("run__model")
        .order_by("run__label", "pk")
    )
    context["benchmark"] = attempt.run.benchmark
    return render_page(request, "runs/checklist/attempt.html", context, page_data=exports.attempt_page, fragment=None)


@login_required
def message_text(request, pk):
    """The full text of one long part of a message (content, reasoning, a tool call's arguments), escaped."""
    return attempt_text_response(_attempt(request, pk), request.GET)


def attempt_text_response(attempt, params, *, judges=None, newest_verdict_id: int | None = None) -> HttpResponse:
    """The escaped full text of the message part named by `params` (thread, msg, field), or of one of
    the attempt's verdicts' reasoning (verdict=<id>; only `judges`' verdicts up to `newest_verdict_id`
    when given, as a share link's scope says), or 404."""
    if "verdict" in params:
        verdicts = Verdict.objects.filter(attempt=attempt, pk=trajectory_view.clamp(params["verdict"], 0, 2**62))
        if judges is not None:
            verdicts = verdicts.filter(judge__name__in=list(judges))
        if newest_verdict_id is not None:
            verdicts = verdicts.filter(id__lte=newest_verdict_id)
        reasoning = verdicts.values_list("reasoning", flat=True).first()
        if reasoning is None:
            raise Http404("no such verdict")
        return HttpResponse(f'<pre class="msg-text">{escape(reasoning)}</pre>')
    try:
        text = trajectory_view.message_part(
            trajectory_view.attempt_threads(attempt.id),
            params.get("thread"),
            params.get("msg"),
            params.get("field", "content"),
        )
    except LookupError:
        raise Http404("no such message") from None
    return HttpResponse(f'<pre class="msg-text">{escape(text)}</pre>')


def judge_reports(attempt_id: int, *, judges=None) -> list[dict]:
    """The attempt's judge reports for display (only `judges`' when given): a long reply cut (the rest is one request away)."""
    return [
        {**r, "reply_piece": trajectory_view.text_piece(r["reply"])}
        for r in checklist_selector.attempt_judge_reports(attempt_id, judges=judges)
    ]


#: characters of a judge's reply per page of its full text
REPLY_PAGE = 50_000


@login_required  # blind annotators are refused by runs.access (the reply is a verdict)
def judge_reply_text(request, pk):
    """One page of a judge's raw reply to an attempt (?judge=<id>&part=<n>), escaped."""
    attempt = _attempt(request, pk)
    judge = trajectory_view.clamp(request.GET.get("judge"), 0, 2**62)
    reply = next(
        (r["reply"] for r in checklist_selector.attempt_judge_reports(attempt.id) if r["judge_id"] == judge), None
    )
    if not reply:
        raise Http404("no such reply")
    parts = -(-len(reply) // REPLY_PAGE)
    part = trajectory_view.clamp(request.GET.get("part"), 1, parts)
    text = reply[(part - 1) * REPLY_PAGE : part * REPLY_PAGE]
    url = reverse("runs:attempt-judge-reply", args=[attempt.id])
    more = (
        f'<p class="more">Part {part} of {parts}: <a href="{url}?judge={judge}&amp;part={part + 1}">next part</a></p>'
        if part < parts
        else ""
    )
    return HttpResponse(f'<pre class="msg-text">{escape(text)}</pre>{more}')


# instance ------------------------------------------------------------------------------
@login_required
def instance(request, pk):
    """The task as the agent saw it, its checklist by source (rewritten items with their versions), and an
    item x model matrix of pass rates."""
    instance = instance_for(request, pk, kinds=(BenchmarkKind.CHECKLIST,))
    matrix = checklist_selector.item_model_matrix(instance.id)
    versions = selectors.item_versions(instance.id)
    for group in matrix["groups"]:
        for item in group["items"]:
            item["versions"] = versions.get(item["id"])  # "v2, rewrites v1" / "superseded by v2"
    spec = instance.spec or {}
    queries = spec.get("user_query") or spec.get("user_queries") or []
    context = {
        "instance": instance,
        "benchmark": instance.benchmark,
        "matrix": matrix,
        "system_prompt": spec.get("system_prompt") or "",
        "user_queries": [queries] if isinstance(queries, str) else [str(q) for q in queries],
        "attempts": Attempt.objects.filter(instance=instance).select_related("run__model").order_by("run__label"),
    }
    return render_page(request, "runs/checklist/instance.html", context, page_data=exports.instance_page, fragment=None)


# side by side --------------------------------------------------------------------------
SIDES = ("a", "b")


@login_required
def attempt_compare(request, pk):
    """Two attempts on one instance side by side: items whose verdicts differ per judge first, both trajectories."""
    instance = instance_for(request, pk, kinds=(BenchmarkKind.CHECKLIST, BenchmarkKind.CONFLICT))
    attempts = list(Attempt.objects.filter(instance=instance).select_related("run__model").order_by("run__label", "pk"))
    chosen = {side: _attempt_of(attempts, request.GET.get(side)) for side in SIDES}
    context = {
        "instance": instance,
        "benchmark": instance.benchmark,
        "attempts": attempts,
        "chosen": chosen,
        "same": chosen["a"] is not None and chosen["a"] == chosen["b"],
    }
    if chosen["a"] and chosen["b"] and not context["same"]:
        sides = {side: _compare_side(request, side, chosen[side]) for side in SIDES}
        paged = next((side for side in SIDES if request.GET.get(f"{side}_page")), None)
        if request.htmx and paged:
            return render(request, "runs/partials/_units.html", sides[paged])
        context["sides"] = [sides[side] for side in SIDES]
        context.update(
            attempt_verdict_diff(instance_id=instance.id, attempt_a_id=chosen["a"].id, attempt_b_id=chosen["b"].id)
        )
        context["differing"] = [d for d in context["items"] if d.n_differ]
        context["alike"] = [d for d in context["items"] if not d.n_differ]
    return render_page(
        request, "runs/checklist/compare_attempts.html", context, page_data=exports.attempt_compare_page, fragment=None
    )


def _attempt_of(attempts: list[Attempt], value: str | None) -> Attempt | None:
    """The attempt a query parameter names, None when absent; 404 when it is not an attempt of the instance."""
    if not value:
        return None
    found = next((a for a in attempts if str(a.pk) == value), None)
    if found is None:
        raise Http404("not an attempt of this instance")
    return found


def _compare_side(request, side: str, attempt: Attempt) -> dict:
    """One column of the side-by-side page: a page of one thread, with its own URL parameters (a_thread, a_page...)."""
    names = {k: f"{side}_{k}" for k in ("thread", "page", "at")}
    view = trajectory_view.thread_page(
        trajectory_view.attempt_threads(attempt.id),
        thread=request.GET.get(names["thread"]),
        page=request.GET.get(names["page"]),
        at=request.GET.get(names["at"]),
    )
    return {
        "side": side,
        "attempt": attempt,
        **view,
        "id_prefix": f"{side}-",
        "page_param": names["page"],
        "thread_param": names["thread"],
        "at_param": names["at"],
        "query": query_with(request, **{names["page"]: None, names["at"]: None}),
        "tab_query": query_with(request, **dict.fromkeys(names.values())),
        "text_url": reverse("runs:attempt-text", args=[attempt.id]),
    }


# analyses ------------------------------------------------------------------------------
@login_required
def judges(request, slug):
    """Judge sensitivity: per-judge ranks, the largest rank shift, Kendall's tau, items judges disagree on."""
    benchmark = _benchmark(request, slug)
    parsed = checklist_query(benchmark, request.GET)
    state, form = parsed.state, parsed.form
    rows = checklist_selector.leaderboard_rows(benchmark.id, state["filters"])
    stability = metrics.rank_stability(rows)
    table = [
        {
            "model": r.model,
            "row": r,
            "ranks": [stability.ranks.get(r.model, {}).get(j) for j in stability.judges],
            "shift": stability.shifts.get(r.model),
        }
        for r in rows
    ]
    disagreements = checklist_selector.judge_disagreements(benchmark.id, state["filters"])
    context = {
        "benchmark": benchmark,
        "form": form,
        "stability": stability,
        "table": table,
        "disagreements": disagreements,
        "query": request.GET.urlencode(),
    }
    return render_page(request, "runs/checklist/judges.html", context, page_data=exports.judges_page, fragment=None)


@blind_safe
@login_required
def length(request, slug):
    """ISR by interaction length (assistant-turn buckets) per model, as a chart and a table."""
    benchmark = _benchmark(request, slug)
    parsed = checklist_query(benchmark, request.GET)
    state, form = parsed.state, parsed.form
    # cached per data generation and filter state: the rows of every rollup regrouped take 1.6 s at 10M verdicts
    rows = cached(
        benchmark.id,
        f"length:{state_digest(state, None)}",
        lambda: metrics.isr_by_length(checklist_selector.attempt_cells(benchmark.id, state["filters"])),
        kind=list,
    )
    buckets = [b for b in metrics.bucket_order() if any(r.group == b for r in rows)]
    cells = {(r.model, r.group): r for r in rows}
    models = sorted({r.model for r in rows})
    table = [{"model": m, "cells": [cells.get((m, b)) for b in buckets]} for m in models]
    context = {
        "benchmark": benchmark,
        "form": form,
        "buckets": buckets,
        "table": table,
        "figure": charts.length_figure(rows, buckets=buckets),
        "query": request.GET.urlencode(),
    }
    return render_page(request, "runs/checklist/length.html", context, page_data=exports.length_page, fragment=None)


@login_required
def compare(request, slug):
    """Paired comparison of two runs (or two models) on the instances both cover: both sides' figures, B - A per
    metric and judge with its paired interval and test (runs.selectors.checklist.compare_paired), and the flipped
    items."""
    benchmark = _benchmark(request, slug)
    runs = list(benchmark.runs.select_related("model").order_by("label"))
    labels = [r.label for r in runs]
    a, b = request.GET.get("a"), request.GET.get("b")
    # before a choice, the form offers two different runs (both selects showed the first one)
    offered = (a or (labels[0] if labels else ""), b or (labels[1] if len(labels) > 1 else ""))
    context = {
        "benchmark": benchmark,
        "labels": labels,
        "models": sorted({r.model.name for r in runs}),
        "a": a,
        "b": b,
        "offered": offered,
    }
    if a and b:
        try:
            a, b = (sides.side_of(benchmark.id, side) for side in (a, b))
        except sides.UnknownSide as unknown:
            context["unknown_side"] = str(unknown)
        else:
            context["comparison"], flips = checklist_selector.compare_checklist(benchmark, a, b)
            context.update(flips)
    return render_page(request, "runs/checklist/compare.html", context, page_data=exports.compare_page, fragment=None)
