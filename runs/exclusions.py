"""Exclusion policies for leaderboards: which checklist items to leave out, supplied from outside runs.

`runs` never imports `audits`; the audits app registers its policies here at start-up
(flagged_by_either, flagged_by_both, adjudicated_invalid, superseded) and the checklist
leaderboard, the hierarchy, dialogue and conflict pages and their APIs ask by name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

_PROVIDERS: dict[str, Callable[[object, str], set[int]]] = {}
_LABELS: dict[str, str] = {}
_EXPLAINERS: dict[str, Callable[[object, str], str]] = {}
_SOURCES: dict[str, Callable[[object, str], str]] = {}

#: excluded items a page lists under a policy (the count is always shown)
EXCLUDED_SHOWN = 300


def exclusion_policy_register(
    policies: Iterable[str] | Mapping[str, str],
    provider: Callable[..., set[int]],
    *,
    explain: Callable[[object, str], str] | None = None,
    sources: Callable[[object, str], str] | None = None,
) -> None:
    """Make `provider(benchmark, policy[, campaigns]) -> item ids` answer for each of these policy names
    (a mapping of name -> label gives the words pages show for them); `explain(benchmark, policy)`
    is the address of a page showing which items are behind the policy's effect, `sources(benchmark,
    policy)` says in words what the policy draws on (e.g. which audit campaigns)."""
    for policy in policies:
        _PROVIDERS[policy] = provider
        _LABELS[policy] = policies[policy] if isinstance(policies, Mapping) else policy.replace("_", " ")
        if explain is not None:
            _EXPLAINERS[policy] = explain
        if sources is not None:
            _SOURCES[policy] = sources


def exclusion_policies() -> list[str]:
    """The policy names leaderboards accept (besides none)."""
    return sorted(_PROVIDERS)


def exclusion_policy_unknown(*, with_none: bool = True, policies: Iterable[str] | None = None) -> str:
    """The words every page and API refuses an exclusion policy name no app registered with, naming the valid ones
    (with "none" where no policy is a choice; `policies` where a page offers only some): a form's invalid_choice
    message, `%(value)r` standing for the name given (`message % {"value": name}` fills it in elsewhere)."""
    valid = sorted(policies) if policies is not None else exclusion_policies()
    return "unknown exclusion policy %(value)r; one of: " + ", ".join((["none"] if with_none else []) + valid)


def exclusion_policy_choices() -> list[tuple[str, str]]:
    """(name, label) for a form: none first, then every registered policy."""
    return [("none", "none (every item)")] + [(p, _LABELS[p]) for p in exclusion_policies()]


def exclusion_policy_label(policy: str | None) -> str:
    """The words for a policy name ("" for none or an unknown name)."""
    return _LABELS.get(policy or "", "")


def exclusion_explain_url(benchmark, policy: str | None) -> str:
    """The page explaining a policy's effect on this benchmark ("" when its app offers none)."""
    explain = _EXPLAINERS.get(policy or "")
    return explain(benchmark, policy) if explain else ""


def exclusion_sources(benchmark, policy: str | None) -> str:
    """What a policy draws on for this benchmark, in words ("" for none or when its app does not say)."""
    sources = _SOURCES.get(policy or "")
    return sources(benchmark, policy) if sources else ""


def excluded_item_ids(benchmark, policy: str | None, campaigns: Iterable[int] | None = None) -> set[int] | None:
    """Item ids the policy leaves out of this benchmark's leaderboards; None for no policy. `campaigns`
    names what a policy draws on instead of its default (audits: the settled campaigns).

    Raises ValueError for a name no app registered.
    """
    if not policy or policy == "none":
        return None
    if policy not in _PROVIDERS:
        raise ValueError(exclusion_policy_unknown() % {"value": policy})
    if campaigns is None:
        return _PROVIDERS[policy](benchmark, policy)
    return _PROVIDERS[policy](benchmark, policy, campaigns)


def exclusion_box(
    policy: str,
    excluded: set[int],
    lines: Sequence,
    tau: float | None,
    swaps: Sequence,
    items: Mapping[int, dict],
    shown: Sequence[dict],
) -> dict:
    """What the hierarchy, dialogue and conflict pages show of a policy's effect, in the shape their
    templates share (`templates/runs/partials/_exclusion_facts.html`): the policy, its count, each row's rank
    line by label, tau, the swaps with their excluded items (and whether the pair ends tied), and the
    first EXCLUDED_SHOWN of `shown`. `items` names the items behind the swaps by id."""
    lines_by = {line.label: line for line in lines}
    return {
        "policy": policy,
        "label": exclusion_policy_label(policy),
        "n_excluded": len(excluded),
        "lines": lines_by,
        "tau": tau,
        "swaps": [
            {
                "up": s.up,
                "down": s.down,
                "tied": lines_by[s.up].rank_after == lines_by[s.down].rank_after,
                "items": [{**d, **items[d["item_id"]]} for d in s.items],
            }
            for s in swaps
        ],
        "shown": shown[:EXCLUDED_SHOWN],
        "n_hidden": max(0, len(shown) - EXCLUDED_SHOWN),
    }
