"""Share links (create, list, revoke; the public frozen pages at s/<token>/).

Public views take no login: the token is the credential. Every failure to resolve a
token, and every page outside the link's scope, is the same 404, so responses tell an
outsider nothing about which tokens exist.
"""

from __future__ import annotations

from django import forms
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.html import format_html
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from runs import pages, search, sharing, trajectory_view
from runs.access import benchmark_for, blind_safe, writes
from runs.exports import checklist as exports_checklist
from runs.models import Attempt, Benchmark, BenchmarkKind, ShareLink
from runs.querystring import query_with
from runs.selectors import checklist as checklist_selector
from runs.views import checklist

EXPORT_FORMATS = pages.EXPORT_FORMATS


class ShareCreateForm(forms.Form):
    """The leaderboard's share form of old (its state as a query string): the frame's form, by another address."""

    query = forms.CharField(required=False, max_length=4000)
    include_attempts = forms.BooleanField(required=False)
    expires_in = forms.ChoiceField(choices=list(sharing.EXPIRY_DAYS.items()), required=False)


def _link(token: str) -> ShareLink:
    link = sharing.share_link_resolve(token)
    if link is None:
        raise Http404("no such share link")
    return link


def _create(request, benchmark: Benchmark, *, path: str, include_attempts: bool, expires_in: str) -> HttpResponse:
    """Freeze the page at `path` through the frame (runs.pages.page_snapshot) into a new link; show its URL once. A
    user who may make no link today is told so before the page is frozen."""
    try:
        sharing.share_count_check(request.user)
    except sharing.ShareRefused as exc:
        return _refused(request, str(exc), status=exc.status)
    try:
        snapshot = pages.page_snapshot(
            request, path=path, benchmark_slug=benchmark.slug, include_attempts=include_attempts
        )
    except pages.NotShareable as exc:
        return _refused(request, f"This page cannot be shared: {exc}.", status=400)
    try:
        link, token = sharing.page_share_link_create(
            user=request.user,
            benchmark=benchmark,
            snapshot=snapshot,
            expires_in_days=int(expires_in) if expires_in else None,
        )
    except sharing.ShareRefused as exc:
        return _refused(request, str(exc), status=exc.status)
    context = {
        "link": link,
        "url": request.build_absolute_uri(reverse("runs:share", args=[token])),
        "benchmark": benchmark,
        "back_url": path,
        "back_label": snapshot["title"],
    }
    template = "runs/sharing/created.html#result" if request.htmx else "runs/sharing/created.html"
    return render(request, template, context)


def _refused(request, message: str, *, status: int) -> HttpResponse:
    """Why no link was made: in the Share form's result box for htmx (which swaps only a 2xx answer into it, so the
    refusal comes as 200 with the reason), else as a plain answer with its status."""
    if request.htmx:
        return HttpResponse(format_html('<p class="notice error" role="alert">{}</p>', message))
    return HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")


# private: create, list, revoke ----------------------------------------------------------
@writes
@login_required  # blind annotators are refused (runs.access): a link with the attempts scope shows verdicts
@require_POST
def share_create(request, slug):
    """The leaderboard of the posted state (a query string) frozen into a new link, as the frame freezes any page."""
    benchmark = benchmark_for(request, slug, kind=BenchmarkKind.CHECKLIST)
    form = ShareCreateForm(request.POST)
    if not form.is_valid():
        return HttpResponse("Invalid share request.", status=400)
    data = form.cleaned_data
    query = pages.page_query(QueryDict(data["query"]))
    path = reverse("runs:checklist-leaderboard", args=[benchmark.slug]) + (f"?{query}" if query else "")
    return _create(
        request, benchmark, path=path, include_attempts=data["include_attempts"], expires_in=data["expires_in"]
    )


class PageShareForm(forms.Form):
    """The page frame's share form: the page's path with its query, and the expiry."""

    path = forms.CharField(max_length=4000)
    include_attempts = forms.BooleanField(required=False)
    expires_in = forms.ChoiceField(choices=list(sharing.EXPIRY_DAYS.items()), required=False)


@writes
@login_required  # blind annotators are refused by runs.access (not blind_safe): only those who may share
@require_POST
def page_share_create(request, slug):
    """Freeze any page of the benchmark rendered through the frame (runs.pages) into a new link; show its URL once."""
    benchmark = benchmark_for(request, slug)
    form = PageShareForm(request.POST)
    if not form.is_valid():
        return HttpResponse("Invalid share request.", status=400)
    data = form.cleaned_data
    return _create(
        request, benchmark, path=data["path"], include_attempts=data["include_attempts"], expires_in=data["expires_in"]
    )


@blind_safe
@login_required
@require_GET
def share_list(request):
    """The user's share links with their state (active, expired, revoked) and a Revoke button."""
    links = [
        {"link": link, "status": sharing.share_link_status(link)} for link in sharing.share_links_of_user(request.user)
    ]
    return render(request, "runs/sharing/list.html", {"links": links})


@writes
@blind_safe
@login_required
@require_POST
def share_revoke(request, pk):
    """Revoke one of the user's links; someone else's link is a 404. Whoever holds a live link loses it, so a POST
    without `confirm=1` only shows what would change."""
    link = sharing.share_links_of_user(request.user).filter(pk=pk).first()
    if link is None:
        raise Http404("no such share link")
    if request.POST.get("confirm") != "1" and sharing.share_link_status(link) == "active":
        return render(
            request,
            "runs/confirm.html",
            {
                "heading": f"Revoke this share link of {link.benchmark.name}?",
                "consequences": revoke_consequences(link),
                "action": request.path,
                "fields": [],
                "confirm_label": "Confirm: revoke the link",
                "cancel_url": reverse("runs:share-list"),
            },
        )
    sharing.share_link_revoke(user=request.user, link_id=pk)
    return redirect("runs:share-list")


def revoke_consequences(link: ShareLink) -> list[str]:
    """What revoking a live link changes for the people who hold it, in sentences."""
    shows = link.state.get("page") or "the leaderboard"
    scope = f" and the {len(link.attempt_ids):,} attempts it opens" if link.scope == "attempts" else ""
    expiry = f"it would expire on {link.expires_at:%Y-%m-%d %H:%M} UTC" if link.expires_at else "it never expires"
    return [
        f"Anyone holding this link will get a 404 (“not found”) from now on: its page{scope}, "
        f"and its downloads. This cannot be undone; to share again, create a new link (a new address).",
        f"It shows {shows} of {link.benchmark.name} as it was on {link.created_at:%Y-%m-%d %H:%M} UTC; {expiry}.",
        "The portal does not record when a link is opened, so it cannot tell whether anyone still uses it.",
    ]


# public: the frozen snapshot and the attempts in its scope ------------------------------
@never_cache
@require_GET
def shared_leaderboard(request, token):
    """The frozen page of a live link, and nothing else: the page as its creator saw it, with its tables to download
    (a link made before pages were kept as shown: the leaderboard's own layout, or any page's tables)."""
    link = _link(token)
    snap = link.snapshot
    data = _frozen(link)
    if "shown" in snap:  # the page as it was shown (runs.frozen_html), its tables as downloads
        body = sharing.snapshot_markup(link, token)
        context = {
            "link": link,
            "token": token,
            "snap": snap,
            "data": data,
            "shown": snap["shown"],
            "body": body,
            "tables": [{"table": t} for t in data.tables],
            # the page of one attempt links to no other: the attempts the link opens are offered beside it
            "opened": sharing.opened_attempts(link) if reverse("runs:share-attempts", args=[token]) not in body else [],
        }
        return render(request, "runs/sharing/page_snapshot.html", context)
    # a leaderboard frozen before pages were kept as shown (runs.selectors.checklist.leaderboard_layout)
    if "overall" in snap:
        cells = {(r["model"], r["group"]): r for r in snap["rows"]}
        matrix = [{"row": o, "cells": [cells.get((o["model"], g)) for g in snap["groups"]]} for o in snap["overall"]]
        context = {
            "link": link,
            "token": token,
            "snap": snap,
            "matrix": matrix,
            "data": data,
            "attempts_url": reverse("runs:share-attempts", args=[token])
            if "drilldown" in snap and link.scope == "attempts"
            else "",
        }
        return render(request, "runs/sharing/snapshot.html", context)
    attempts = link.attempt_ids if link.scope == "attempts" else ()
    tables = [{"table": t, "rows": pages.shown_rows(t, attempts=attempts)} for t in data.tables]
    context = {"link": link, "token": token, "snap": snap, "data": data, "tables": tables}
    return render(request, "runs/sharing/page_snapshot.html", context)


def _frozen(link: ShareLink) -> pages.PageData:
    """The frozen PageData of a link (a leaderboard snapshot made before the frame froze it: its rows as the table)."""
    snap = link.snapshot
    if snap.get("kind") == "page":
        return pages.snapshot_page_data(snap)
    return pages.PageData(
        "Leaderboard",
        [exports_checklist.leaderboard_table(snap["rows"])],
        help_anchor="checklist",
        layout={k: snap[k] for k in ("state", "by", "rows") if k in snap} | {"benchmark": link.benchmark.slug},
    )


@never_cache
@require_GET
def shared_export(request, token):
    """The frozen tables of a live link as CSV (one table) or JSON (all of them), through the frame's export."""
    link = _link(token)
    fmt = request.GET.get("format", "csv")
    if fmt not in EXPORT_FORMATS:
        raise Http404("unknown export format")
    return pages.export_response(
        _frozen(link),
        fmt=fmt,
        table=request.GET.get("table"),
        filename=f"{link.benchmark.slug}-snapshot-{link.created_at:%Y%m%d}",
        state=link.snapshot.get("state") or {},
    )


@never_cache
@require_GET
def shared_attempts(request, token):
    """The frozen attempts behind one cell of a link created with attempt scope, failing first."""
    link = _link(token)
    model, group = request.GET.get("model", ""), request.GET.get("group") or None
    rows = sharing.snapshot_attempt_rows(link, model=model, group=group) if link.scope == "attempts" else None
    if rows is None:
        raise Http404("not in this link's scope")
    by = link.state["by"] if group else "model"
    page = Paginator(rows, checklist.ATTEMPTS_PAGE).get_page(request.GET.get("page"))
    checklist_selector.attach_failing_items(
        page.object_list, by=by, group=group, **sharing.snapshot_verdict_scope(link)
    )
    context = {
        "link": link,
        "token": token,
        "snap": link.snapshot,
        "model": model,
        "group": group,
        "page": page,
        "n_failing": sum(r.failing for r in rows),
        "query": query_with(request, page=None),
    }
    template = "runs/sharing/attempts.html#rows" if request.htmx else "runs/sharing/attempts.html"
    return render(request, template, context)


def _scoped_attempt(link: ShareLink, pk: int) -> Attempt:
    if not sharing.share_link_allows_attempt(link, pk):
        raise Http404("not in this link's scope")
    return get_object_or_404(
        Attempt.objects.select_related("run__model", "instance"), pk=pk, run__benchmark=link.benchmark
    )


@never_cache
@require_GET
def shared_attempt(request, token, pk):
    """One attempt in a link's scope, of any kind: its trajectory (paged; its response when it has none) beside the
    verdicts of the link's judges stored when the link was made, read-only."""
    link = _link(token)
    attempt = _scoped_attempt(link, pk)
    view = trajectory_view.thread_page(
        trajectory_view.attempt_threads(attempt.id),
        thread=request.GET.get("thread"),
        q=request.GET.get("q", ""),
        page=request.GET.get("page"),
        at=request.GET.get("at"),
        find=search.ThreadFind,
    )
    context = {
        "link": link,
        "token": token,
        "snap": link.snapshot,
        "attempt": attempt,
        **view,
        "response": trajectory_view.text_piece(attempt.response or ""),  # what kinds without a trajectory show
        "text_url": reverse("runs:share-attempt-text", args=[token, attempt.id]),
        "query": query_with(request, page=None, at=None),
    }
    if request.htmx and request.GET.get("page"):
        return render(request, "runs/sharing/attempt.html#units", context)
    scope = sharing.snapshot_verdict_scope(link)
    context.update(
        items=checklist_selector.attempt_checklist(attempt.id, reasoning_cut=trajectory_view.CUT, **scope),
        verdict_judges=scope["judges"],
        reports=checklist.judge_reports(attempt.id, judges=scope["judges"]),
    )
    return render(request, "runs/sharing/attempt.html", context)


@never_cache
@require_GET
def shared_attempt_text(request, token, pk):
    """The full text of one long part of a message of an attempt in the link's scope, escaped."""
    link = _link(token)
    return checklist.attempt_text_response(
        _scoped_attempt(link, pk), request.GET, **sharing.snapshot_verdict_scope(link)
    )
