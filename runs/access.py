"""Who may see and change what: the roles every app shares, the blindness guarantee and the write rule, for every route.

Roles are Django groups: "lead", "annotator", "reviewer", "editor" (a superuser counts as a
lead; a signed-in user in no group reads results like a reviewer). An annotator who is neither
reviewer nor lead, staff nor superuser is *blind*: before their own label settles they must
learn nothing about any judge's verdict on the items they may be asked to label, nor about
another annotator's label.

Reading is every team member's; changing what everyone sees is not. Imports, re-checks, share
links (made and revoked) and job retries are *writes*, for editors and leads (`can_write`); a
reviewer, and a user in no group, read everything and change nothing. `WriteAccessMiddleware`
enforces it once: a view declared `writes` is refused (403, `WRITE_REFUSAL`) to everyone else
on every method, and so is any POST, PUT, PATCH or DELETE to a route of the results app
(`WRITE_GUARDED_NAMESPACES`), declared or not, so a new write route is closed to readers even
if its author forgot the declaration. (The audit routes keep their own rules, `audits.access`:
annotators label, leads run campaigns.) `{% reachable %}` reads the same declaration, so pages
show no control that would answer 403.

The rule is enforced once, for every page, fragment, export and API endpoint, by
`BlindnessMiddleware`: a blind annotator reaches only the views declared `blind_safe`, and
every other resolved route answers 403 with `BLIND_REFUSAL`. A new route is therefore closed
to blind annotators until someone declares it safe, never open because someone forgot a
decorator. Safe views show aggregates only (leaderboards, metric tables, curves) or filter
themselves through the audit access helpers (`audits.access`: own assignments, own labels
until a unit closes). `blind_safe(drop=...)` names the query parameters that would narrow an
aggregate down to single items (a drill-down cell, a failing-turn list); the middleware
removes them, and an exclusion (`exclude` and `health`, which read annotators' labels) on
every route, before the view runs, so the view cannot honour them.

Templates read `blind` (the context processor `context`) to leave out controls a blind
annotator cannot use.

Every page and API endpoint reaches a stored object through one helper per model below
(`benchmark_for`, `attempt_for`, `instance_for`, `job_for`): each answers 404 for what the
request's user may not read, so a page and its API refuse the same requests the same way. tests/security/test_blind_walk.py walks every URL pattern as a blind
annotator and fails on any seeded verdict, reasoning, outcome or label that reaches them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from django.core.exceptions import PermissionDenied
from django.http import Http404, JsonResponse
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.authentication import TokenAuthentication
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.permissions import BasePermission

from runs.models import Attempt, Benchmark, Instance, Job

LEAD, ANNOTATOR, REVIEWER, EDITOR = "lead", "annotator", "reviewer", "editor"
ROLES = (LEAD, ANNOTATOR, REVIEWER, EDITOR)
BLIND_REFUSAL = (
    "Annotators label blind: judges' verdicts, their reasoning, the trajectories behind them and other "
    "annotators' labels are for reviewers and leads. Your closed audit units show the verdicts on their "
    "items; ask a lead for the reviewer role to browse results."
)
#: URL namespaces whose views this project does not write and that refuse non-staff users themselves
#: (a blind annotator is never staff)
SELF_GUARDED_NAMESPACES = ("admin",)
#: query parameters no view may honour for a blind annotator: an audit exclusion policy leaves out the items
#: annotators flagged, so a page under it tells which items the other annotator flagged; item health flags
#: (`health`) read annotators' labels and judges' splits on single items alike
ALWAYS_DROPPED = ("exclude", "health")
WRITE_REFUSAL = (
    "Your role reads results and changes nothing: imports, re-checks, share links and job retries are "
    "for editors and leads. Ask a lead for the editor role."
)
#: URL namespaces whose every unsafe-method request is a write, declared `writes` or not (the results app's pages
#: and API; the audit namespaces check their own roles in audits.access)
WRITE_GUARDED_NAMESPACES = ("runs", "api")
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


# roles ---------------------------------------------------------------------------------
#: the user's role group names, read and cached with the user by the sign-in backend (ifportal.auth); absent on a
#: user loaded otherwise (an API token's, a test's), whose roles are then read here
ROLE_NAMES_ATTRIBUTE = "_ifportal_role_names"


def role_group_names(user) -> frozenset[str]:
    """The names of the role groups the user is in (one query)."""
    return frozenset(user.groups.filter(name__in=ROLES).values_list("name", flat=True))


def roles_of(user) -> set[str]:
    """The roles of a user (a superuser is a lead)."""
    if not user.is_authenticated:
        return set()
    names = getattr(user, ROLE_NAMES_ATTRIBUTE, None)
    roles = set(role_group_names(user) if names is None else names)
    if user.is_superuser:
        roles.add(LEAD)
    return roles


def is_lead(user) -> bool:
    return LEAD in roles_of(user)


def can_see_all(user) -> bool:
    """Leads and reviewers see every label, identity and verdict; annotators do not."""
    return bool(roles_of(user) & {LEAD, REVIEWER})


def is_blind_annotator(user) -> bool:
    """An annotator who is not also a reviewer, a lead, staff or a superuser (being an editor too unblinds no one)."""
    if not user.is_authenticated or user.is_superuser or user.is_staff:
        return False
    roles = roles_of(user)
    return ANNOTATOR in roles and not roles & {LEAD, REVIEWER}


def can_write(user) -> bool:
    """Editors and leads (a superuser is a lead) may change what everyone sees; everyone else only reads."""
    return bool(roles_of(user) & {EDITOR, LEAD})


# one access helper per model ---------------------------------------------------------------
# Every signed-in team member reads every benchmark, run, attempt and job (what a blind annotator may
# see of them is the route's business: BlindnessMiddleware); an anonymous request reads none (a share
# link reaches its own objects through its token, runs.sharing).
def _kind_name(kinds) -> str:
    return " or ".join(kinds) if kinds else "a"


def benchmark_for(request, slug: str, *, kind: str | None = None) -> Benchmark:
    """The benchmark with this slug (of this kind when given) if the request's user may read it, else 404."""
    found = (
        Benchmark.objects.filter(slug=slug, **({"kind": kind} if kind else {})).first()
        if request.user.is_authenticated
        else None
    )
    if found is None:
        raise Http404(f"No {f'{kind} ' if kind else ''}benchmark has the slug '{slug}'.")
    return found


def attempt_for(request, pk, *, kinds: tuple[str, ...] = (), slug: str | None = None) -> Attempt:
    """The attempt with its run, model, benchmark and instance (of a benchmark of these kinds, with this slug when
    given) if the request's user may read it, else 404."""
    filters = {
        "pk": pk,
        **({"run__benchmark__kind__in": kinds} if kinds else {}),
        **({"run__benchmark__slug": slug} if slug else {}),
    }
    found = (
        Attempt.objects.select_related("run__model", "run__benchmark", "instance").filter(**filters).first()
        if request.user.is_authenticated
        else None
    )
    if found is None:
        raise Http404(f"No attempt {pk} of {_kind_name(kinds)} benchmark.")
    return found


def instance_for(
    request, pk=None, *, kinds: tuple[str, ...] = (), benchmark: Benchmark | None = None, external_id: str | None = None
) -> Instance:
    """The instance with its benchmark, by id (of a benchmark of these kinds) or by `external_id` in `benchmark`,
    if the request's user may read it, else 404."""
    filters = {
        **({"pk": pk} if pk is not None else {}),
        **({"benchmark__kind__in": kinds} if kinds else {}),
        **({"benchmark": benchmark} if benchmark is not None else {}),
        **({"external_id": external_id} if external_id is not None else {}),
    }
    found = (
        Instance.objects.select_related("benchmark").filter(**filters).first()
        if request.user.is_authenticated and (pk is not None or external_id is not None)
        else None
    )
    if found is None:
        raise Http404(f"No instance {pk if pk is not None else external_id!r} of {_kind_name(kinds)} benchmark.")
    return found


def job_for(request, job_id) -> Job:
    """The job with who started it if the request's user may read it (every signed-in team member reads every
    job), else 404."""
    found = (
        Job.objects.select_related("created_by").filter(pk=job_id).first() if request.user.is_authenticated else None
    )
    if found is None:
        raise Http404("No such job.")
    return found


# the blindness guarantee -----------------------------------------------------------------
@dataclass(frozen=True)
class BlindSafe:
    """How a view may serve a blind annotator: with these query parameters removed."""

    drop: tuple[str, ...] = ()


def blind_safe(view=None, *, drop: tuple[str, ...] = ()):
    """Declare a view (function or class) safe for blind annotators once `drop` is removed from its query.

    Declare only views that show aggregates over many items, or that check each object through
    the audit access helpers; everything else is refused to blind annotators by the middleware."""

    def mark(target):
        target.blind_access = BlindSafe(tuple(drop))
        return target

    return mark(view) if view is not None else mark


def blind_access_of(view_func) -> BlindSafe | None:
    """The declaration of a resolved view (a function, or the `as_view()` of a class), None when undeclared."""
    found = getattr(view_func, "blind_access", None)
    if found is None:
        found = getattr(getattr(view_func, "view_class", None), "blind_access", None)
    return found


def _request_user(request):
    """The session user, or the user of an API token (DRF authenticates tokens only inside the view), with their
    role names read once for the request (the blindness and the write rule both ask)."""
    found = getattr(request, "_access_user", None)
    if found is None:
        found = request._access_user = _with_role_names(_authenticated_user(request))
    return found


def _authenticated_user(request):
    user = request.user
    if user.is_authenticated or "HTTP_AUTHORIZATION" not in request.META:
        return user
    try:
        found = TokenAuthentication().authenticate(request)
    except AuthenticationFailed:
        return user  # DRF answers 401 for it inside the view
    return found[0] if found else user


def _with_role_names(user):
    """The user, carrying their role names as the sign-in backend's cached users do (ROLE_NAMES_ATTRIBUTE)."""
    if user.is_authenticated and getattr(user, ROLE_NAMES_ATTRIBUTE, None) is None:
        setattr(user, ROLE_NAMES_ATTRIBUTE, role_group_names(user))
    return user


class _RouteMiddleware:
    """A middleware whose work is in `process_view`, once the route (and so its view's declarations) is known."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)


def _namespace(request) -> str:
    """The outermost URL namespace of the resolved route ("" for the root's own routes)."""
    match = request.resolver_match
    return match.namespaces[0] if match is not None and match.namespaces else ""


def _refuse(view_func, reason: str):
    """403 with the reason: as JSON for a DRF view (as the API answers), else the 403 page."""
    if hasattr(view_func, "cls"):
        return JsonResponse({"detail": reason}, status=403)
    raise PermissionDenied(reason)


class BlindnessMiddleware(_RouteMiddleware):
    """Refuse every route not declared `blind_safe` to a blind annotator; strip the declared query parameters."""

    def process_view(self, request, view_func, view_args, view_kwargs):
        if _namespace(request) in SELF_GUARDED_NAMESPACES:
            return None
        request.blind_annotator = is_blind_annotator(_request_user(request))  # read once, by templates too
        if not request.blind_annotator:
            return None
        declared = blind_access_of(view_func)
        if declared is None:
            return _refuse(view_func, BLIND_REFUSAL)
        dropped = ALWAYS_DROPPED + declared.drop
        if any(name in request.GET for name in dropped):
            query = request.GET.copy()
            for name in dropped:
                query.pop(name, None)
            query._mutable = False
            request.GET = query
        return None


# the write rule ---------------------------------------------------------------------------
def writes(view):
    """Declare a view (function or class) a write: only users who `can_write` reach it, on every method (a page
    that exists to write, like the import form, is refused on GET too). A DRF view also gets `WritePermission`, so
    the rule holds for whoever DRF authenticates, however it does."""
    view.write_access = True
    if isinstance(view, type) and hasattr(view, "permission_classes"):
        view.permission_classes = [*view.permission_classes, WritePermission]
    return view


class WritePermission(BasePermission):
    """DRF's side of `writes`: a signed-in user who may not write is refused (anonymous users are left to
    authentication, which answers 401)."""

    message = WRITE_REFUSAL

    def has_permission(self, request, view):
        return not request.user.is_authenticated or can_write(request.user)


def writes_of(view_func) -> bool:
    """Whether a resolved view (a function, or the `as_view()` of a class) is declared `writes`."""
    return bool(
        getattr(view_func, "write_access", False)
        or getattr(getattr(view_func, "view_class", None), "write_access", False)
    )


def request_can_write(request) -> bool:
    """`can_write` for the request's user (session or API token), read once per request."""
    found = getattr(request, "can_write", None)
    if found is None:
        found = request.can_write = can_write(_request_user(request))
    return found


class WriteAccessMiddleware(_RouteMiddleware):
    """Refuse writes to signed-in users who may not write: views declared `writes`, and every unsafe method on a
    route of `WRITE_GUARDED_NAMESPACES`. Anonymous requests pass on to the view, whose login rule answers them."""

    def process_view(self, request, view_func, view_args, view_kwargs):
        namespace = _namespace(request)
        if namespace in SELF_GUARDED_NAMESPACES:
            return None
        if not (writes_of(view_func) or (request.method not in SAFE_METHODS and namespace in WRITE_GUARDED_NAMESPACES)):
            return None
        if not _request_user(request).is_authenticated or request_can_write(request):
            return None
        return _refuse(view_func, WRITE_REFUSAL)


def request_is_blind(request) -> bool:
    """Whether the request's user is a blind annotator (read once by the middleware; a request it did not see, as a
    snapshot's, is asked here). The page frame gives such a user a page's aggregate tables only (runs.pages)."""
    blind = getattr(request, "blind_annotator", None)
    return is_blind_annotator(request.user) if blind is None else blind


@lru_cache(maxsize=4)
def _views_by_name(root: URLResolver) -> dict[str, object]:
    """Every named route of a URLconf ("namespace:name") -> its view."""
    found = {}

    def walk(resolver: URLResolver, namespace: str | None):
        for entry in resolver.url_patterns:
            if isinstance(entry, URLResolver):
                inner = (
                    f"{namespace}:{entry.namespace}"
                    if namespace and entry.namespace
                    else (entry.namespace or namespace)
                )
                walk(entry, inner)
            elif isinstance(entry, URLPattern) and entry.name:
                found.setdefault(f"{namespace}:{entry.name}" if namespace else entry.name, entry.callback)

    walk(root, None)
    return found


def may_open(request, url_name: str, *params: str) -> bool:
    """Whether the route `url_name` serves this request's user, and honours the query parameters `params`
    (the links of a page show only controls that work: `{% reachable %}` in runs/templatetags/access.py).
    A write route (`writes`) serves only users who may write; every route must be declared so for this to hold."""
    view = _views_by_name(get_resolver())[url_name]
    if writes_of(view) and not request_can_write(request):
        return False
    if not request_is_blind(request):
        return True
    declared = blind_access_of(view)
    return declared is not None and not set(params) & set(ALWAYS_DROPPED + declared.drop)


def context(request) -> dict:
    """Template context: `blind` is true for a blind annotator (pages leave out controls that would answer 403)."""
    blind = getattr(request, "blind_annotator", None)
    if blind is None:  # a response made before the view was resolved (a 404 page)
        user = getattr(request, "user", None)
        blind = user is not None and is_blind_annotator(user)
    return {"blind": blind}
