"""Share links: tokens, scope, budgets, the frozen verdict scope of a page snapshot (`runs.pages.page_snapshot`) and
the markup its public page shows.

A link's token is shown once, at creation; only its SHA-256 is stored and compared in
constant time. The snapshot holds what the page showed, as the page computed it, so a
link keeps showing what its creator saw after new verdicts arrive. With scope "attempts"
it also freezes which attempts stood behind its rows, and the link may open those
attempts and no others, with the verdicts stored when it was made.
"""

from __future__ import annotations

import hashlib
import hmac
import html
import json
import re
import secrets
from datetime import timedelta
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from django.db.models import Count, Func, IntegerField, Max, Sum
from django.http import HttpRequest, QueryDict
from django.urls import Resolver404, resolve, reverse
from django.utils import timezone
from django.utils.safestring import SafeString

from runs.frozen_html import relinked
from runs.metrics.checklist import AttemptRow
from runs.models import Attempt, Benchmark, ShareLink, ShareScope, Verdict
from runs.pages import page_snapshot
from runs.selectors.checklist import cell_key, state_query

TOKEN_BYTES = 32  # secrets.token_urlsafe(32): 43 characters, 256 bits
MAX_TOKEN_LENGTH = 100  # longer strings are not tokens; refuse them before hashing
#: expiry choices of the share form: days (as a string) -> label; "" never expires
EXPIRY_DAYS = {"": "never", "1": "in 1 day", "7": "in 7 days", "30": "in 30 days", "90": "in 90 days"}


# snapshots -------------------------------------------------------------------------------
def data_version(benchmark_id: int) -> str:
    """Which verdicts a snapshot saw: their count and the newest verdict id of the benchmark."""
    agg = Verdict.objects.filter(attempt__run__benchmark_id=benchmark_id).aggregate(n=Count("id"), newest=Max("id"))
    return f"verdicts={agg['n']};newest={agg['newest'] or 0}"


def snapshot_attempt_rows(link: ShareLink, *, model: str, group: str | None) -> list[AttemptRow] | None:
    """The frozen attempts behind one cell of a link's snapshot, or None when the link has no such cell."""
    drilldown = link.snapshot.get("drilldown") or {}
    entries = (drilldown.get("cells") or {}).get(cell_key(model, group))
    if entries is None:
        return None
    judges, facts = drilldown["judges"], drilldown["attempts"]
    rows = []
    for attempt_id, counts in entries:
        instance_id, external_id, run, turns = facts[str(attempt_id)]
        per_judge = {j: tuple(c) for j, c in zip(judges, counts) if c is not None}
        rows.append(AttemptRow(attempt_id, instance_id, run, turns, per_judge, external_id))
    return rows


#: pages of one attempt, by route: a frozen page's link to one of them opens the attempt's frozen page, in scope
ATTEMPT_ROUTES = ("runs:attempt", "runs:dialogue-viewer", "runs:hierarchy-attempt")
_HREF = re.compile(r'href="([^"]*)"')


#: attempts a shared page lists beside its frozen markup when that markup links to none of them
OPENED_LISTED = 20


def opened_attempts(link: ShareLink) -> list[dict]:
    """The attempts a link made with its attempts opens (the first OPENED_LISTED), each with its instance and run, for
    a shared page whose frozen markup links to none of them (the page of one attempt, task or sample)."""
    if link.scope != ShareScope.ATTEMPTS or not link.attempt_ids:
        return []
    return list(
        Attempt.objects.filter(id__in=link.attempt_ids[:OPENED_LISTED])
        .order_by("id")
        .values("id", "instance__external_id", "run__label")
    )


def snapshot_markup(link: ShareLink, token: str) -> SafeString:
    """The page a link froze, as its public page shows it (runs.frozen_html): a link to an attempt the link opens
    leads to its frozen page, a leaderboard cell's to its frozen attempt list, the help page and in-page anchors
    stay, and every other link (to pages an outsider cannot open) is its text alone."""
    body = link.snapshot["shown"]["html"]
    allowed = set(link.attempt_ids) if link.scope == ShareScope.ATTEMPTS else set()
    cells = ((link.snapshot.get("drilldown") or {}).get("cells") or {}) if allowed else {}
    routes = {target: _route(target) for target in {html.unescape(h) for h in _HREF.findall(body)}}
    tasks = (
        dict(
            Attempt.objects.filter(
                id__in=allowed,
                run__benchmark_id=link.benchmark_id,
                instance__external_id__in={
                    kw.get("external_id") for name, kw, _ in routes.values() if name == "runs:choice-task"
                },
            )
            .order_by("-id")
            .values_list("instance__external_id", "id")
        )
        if allowed
        else {}
    )  # a task's first attempt wins

    def href(target: str) -> str | None:
        if target.startswith("#"):
            return target
        name, kwargs, query = routes.get(target) or _route(target)
        if name == "runs:help-metrics":
            return target
        if name == "runs:checklist-attempts":
            model, group = query.get("model", ""), query.get("group") or None
            if cell_key(model, group) not in cells:
                return None
            cell = QueryDict(mutable=True)
            cell["model"] = model
            if group is not None:
                cell["group"] = group
            return reverse("runs:share-attempts", args=[token]) + "?" + cell.urlencode()
        attempt = kwargs.get("pk") if name in ATTEMPT_ROUTES else tasks.get(kwargs.get("external_id"))
        if attempt not in allowed:
            return None
        fragment = urlsplit(target).fragment
        return reverse("runs:share-attempt", args=[token, attempt]) + (f"#{fragment}" if fragment else "")

    return relinked(body, href=href)  # markup the allow-list rebuilt when the link was made


def _route(target: str) -> tuple[str, dict, QueryDict]:
    """(route name, its arguments, the query) of a link on a frozen page; ("", {}, empty) for none of the portal's."""
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not parts.path.startswith("/"):
        return "", {}, QueryDict()
    try:
        match = resolve(parts.path)
    except Resolver404:
        return "", {}, QueryDict()
    return match.view_name, match.kwargs, QueryDict(parts.query)


# share links -----------------------------------------------------------------------------
def token_hash(token: str) -> str:
    """SHA-256 (hex) of a token: what the database keeps instead of the token."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def share_link_create(
    *, user, benchmark: Benchmark, state: dict, include_attempts: bool = False, expires_in_days: int | None = None
) -> tuple[ShareLink, str]:
    """Freeze the leaderboard of this state, as `user` sees it, into a new link through the frame (as its Share form
    does); returns the link and its token (shown once)."""
    query = state_query(state).urlencode()
    path = reverse("runs:checklist-leaderboard", args=[benchmark.slug]) + (f"?{query}" if query else "")
    request = HttpRequest()
    request.user, request.META = user, {"SERVER_NAME": "portal", "SERVER_PORT": "80"}
    snapshot = page_snapshot(request, path=path, benchmark_slug=benchmark.slug, include_attempts=include_attempts)
    return page_share_link_create(user=user, benchmark=benchmark, snapshot=snapshot, expires_in_days=expires_in_days)


class ShareRefused(Exception):
    """Why a user may not make another share link now (`share_budget_check`), and the HTTP status that says so."""

    def __init__(self, message: str, *, status: int):
        super().__init__(message)
        self.status = status


class StoredSize(Func):
    """Bytes a JSON column takes where it is stored: PostgreSQL's own (compressed) size, elsewhere its text's."""

    function = "length"
    output_field = IntegerField()

    def as_postgresql(self, compiler, connection, **extra):
        return super().as_sql(compiler, connection, function="pg_column_size", **extra)


def share_count_check(user) -> None:
    """ShareRefused when `user` may make no share link now: IFPORTAL_SHARE_LINKS_PER_DAY made in the last 24 hours
    (0: sharing is off). Cheap, so the Share form asks it before the page is frozen."""
    limit = settings.IFPORTAL_SHARE_LINKS_PER_DAY
    if limit <= 0:
        raise ShareRefused("Sharing is turned off on this portal (IFPORTAL_SHARE_LINKS_PER_DAY is 0).", status=403)
    since = timezone.now() - timedelta(days=1)
    recent = list(
        ShareLink.objects.filter(created_by=user, created_at__gte=since)
        .order_by("created_at")
        .values_list("created_at", flat=True)[:limit]
    )
    if len(recent) >= limit:
        again = recent[0] + timedelta(days=1)
        raise ShareRefused(
            f"You have made {len(recent)} share link{'s' if len(recent) != 1 else ''} in the last 24 "
            "hours, the most one user may make; "
            f"you can make another after {again:%Y-%m-%d %H:%M} UTC.",
            status=429,
        )


def share_budget_check(user, snapshot: dict) -> None:
    """ShareRefused when `user` may make no more links today (`share_count_check`), or when this snapshot would take
    the frozen data of their unrevoked links (expired ones included) past IFPORTAL_SHARE_MB_PER_USER: what one
    signed-in user's share links may cost the database, however many they make (revoking drops a link's data)."""
    share_count_check(user)
    budget = settings.IFPORTAL_SHARE_MB_PER_USER * 2**20
    # the new snapshot as the JSON column writes it, twice over with its attempt list: never less than it stores
    size = len(json.dumps(snapshot, cls=DjangoJSONEncoder)) + len(json.dumps(snapshot.get("attempts") or []))
    stored = (
        ShareLink.objects.filter(created_by=user, revoked_at__isnull=True).aggregate(
            n=Sum(StoredSize("snapshot") + StoredSize("attempt_ids") + StoredSize("state"))
        )["n"]
        or 0
    )
    if stored + size > budget:
        raise ShareRefused(
            f"This page's snapshot takes up to {size / 2**20:.1f} MB and your unrevoked share links "
            f"(expired ones included) take {stored / 2**20:.1f} MB of the "
            f"{settings.IFPORTAL_SHARE_MB_PER_USER} MB one user's links may take: revoke links you no "
            "longer need (their frozen data is then dropped), or share a narrower page, or this page "
            "without its attempts.",
            status=413,
        )


def page_share_link_create(
    *, user, benchmark: Benchmark, snapshot: dict, expires_in_days: int | None = None
) -> tuple[ShareLink, str]:
    """A new link to a frozen page snapshot (`runs.pages.page_snapshot`); returns the link and its token (shown once).

    A snapshot made with its attempts gives the link the attempts scope: it opens those attempts and no others.
    ShareRefused past the user's share budget (`share_budget_check`), checked and spent under a lock on the user,
    so requests sent at once cannot each find room for one more."""
    with transaction.atomic():
        get_user_model().objects.select_for_update().filter(pk=user.pk).values_list("pk", flat=True).first()
        share_budget_check(user, snapshot)
        token = secrets.token_urlsafe(TOKEN_BYTES)
        attempt_ids = sorted(int(i) for i in snapshot.get("attempts") or ())
        link = ShareLink.objects.create(
            token_hash=token_hash(token),
            benchmark=benchmark,
            state=snapshot["state"],
            snapshot=snapshot,
            scope=ShareScope.ATTEMPTS if attempt_ids else ShareScope.LEADERBOARD,
            attempt_ids=attempt_ids,
            data_version=data_version(benchmark.id),
            created_by=user,
            expires_at=timezone.now() + timedelta(days=expires_in_days) if expires_in_days else None,
        )
    return link, token


#: what revoking a link keeps of it: its row, state (what it showed, for the owner's list) and scope; its frozen data
#: (the snapshot and the attempt list) is dropped, as nobody can open it again
REVOKED_DROPS = {"snapshot": {}, "attempt_ids": []}


def share_link_revoke(*, user, link_id: int) -> ShareLink | None:
    """Revoke one of the user's links (idempotent); None when the user has no such link. Its frozen data is dropped
    (REVOKED_DROPS) and its space returns to the user's share budget."""
    link = ShareLink.objects.filter(pk=link_id, created_by=user).first()
    if link is not None and link.revoked_at is None:
        link.revoked_at = timezone.now()
        for name, empty in REVOKED_DROPS.items():
            setattr(link, name, empty)
        link.save(update_fields=["revoked_at", *REVOKED_DROPS])
    return link


def share_link_resolve(token: str) -> ShareLink | None:
    """The live link for a token, or None: unknown, revoked and expired tokens are alike to the caller."""
    if not token or len(token) > MAX_TOKEN_LENGTH:
        return None
    digest = token_hash(token)
    link = ShareLink.objects.select_related("benchmark").filter(token_hash=digest).first()
    if link is None or not hmac.compare_digest(link.token_hash, digest):
        return None
    if link.revoked_at is not None or (link.expires_at is not None and link.expires_at <= timezone.now()):
        return None
    return link


def snapshot_verdict_scope(link: ShareLink) -> dict:
    """What a link's attempt pages may show of the verdicts: the snapshot's judges, and verdicts stored when it was made.

    {"judges": [names], "newest_verdict_id": id}, the keyword arguments of metrics.attempt_checklist."""
    newest = dict(part.split("=", 1) for part in link.data_version.split(";") if "=" in part).get("newest")
    if (
        link.snapshot.get("kind") == "page" and "drilldown" not in link.snapshot
    ):  # the judges the page read, None for all
        judges = link.snapshot.get("judges")
    else:
        judges = (link.snapshot.get("drilldown") or {}).get("judges")
        judges = judges if judges is not None else link.state.get("judge") or None
    return {"judges": judges, "newest_verdict_id": int(newest) if newest and newest.isdigit() else None}


def share_link_allows_attempt(link: ShareLink, attempt_id: int) -> bool:
    """Whether the link's scope lists this attempt."""
    return link.scope == ShareScope.ATTEMPTS and attempt_id in set(link.attempt_ids)


def share_link_status(link: ShareLink) -> str:
    """ "active", "expired" or "revoked", for the owner's list."""
    if link.revoked_at is not None:
        return "revoked"
    if link.expires_at is not None and link.expires_at <= timezone.now():
        return "expired"
    return "active"


def share_links_of_user(user):
    """The user's links, newest first, without their (possibly large) snapshots."""
    return ShareLink.objects.filter(created_by=user).select_related("benchmark").defer("snapshot", "attempt_ids")
