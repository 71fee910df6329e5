"""Exclusion policies for leaderboards: which checklist items to leave out, supplied from outside runs.

`runs` never imports `audits`; the audits app registers its policies here at start-up
(flagged_by_either, flagged_by_both, adjudicated_invalid, superseded), runs.apps registers the item health ones
(health:<flag>, health:any), and the checklist leaderboard, the hierarchy, dialogue and conflict pages and their
APIs ask by name.

Policies compose: a composed policy is its parts' names joined by COMPOSE (`flagged_by_either+health:floor`), built
by `exclusion_policy_compose`, and leaves out the union of the items its parts leave out. Every function here takes
a composed name where it takes a name, so a page's state carries one policy name whatever it composes, and its
label, explanation and sources name every part.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

_PROVIDERS: dict[str, Callable[[object, str], set[int]]] = {}
_LABELS: dict[str, str] = {}
_EXPLAINERS: dict[str, Callable[[object, str], str]] = {}
_SOURCES: dict[str, Callable[[object, str], str]] = {}

#: excluded items a page lists under a policy (the count is always shown)
EXCLUDED_SHOWN = 300
#: what joins the parts of a composed policy's name, and their labels ("a + b")
COMPOSE = "+"


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


def exclusion_policy_compose(policies: Iterable[str | None]) -> str:
    """One policy name leaving out the union of what these leave out: their names in the order given, without
    repeats, "none" and empty names, joined by COMPOSE ("none" when none is left). Composing a composed name
    flattens it."""
    parts = [p for policy in policies for p in exclusion_policy_parts(policy)]
    return COMPOSE.join(dict.fromkeys(parts)) or "none"


def exclusion_policy_parts(policy: str | None) -> list[str]:
    """The registered names a (composed) policy name is made of; [] for none."""
    if not policy or policy == "none":
        return []
    return [p for p in policy.split(COMPOSE) if p and p != "none"]


def exclusion_policy_label(policy: str | None) -> str:
    """The words for a policy name, each part's joined by " + " ("" for none or an unknown name)."""
    labels = [_LABELS.get(p, "") for p in exclusion_policy_parts(policy)]
    return "" if not all(labels) else f" {COMPOSE} ".join(labels)


def exclusion_explain_links(benchmark, policy: str | None) -> list[tuple[str, str]]:
    """(label, address) of the page explaining each part's effect on this benchmark, for the parts whose app
    offers one."""
    links = []
    for part in exclusion_policy_parts(policy):
        explain = _EXPLAINERS.get(part)
        url = explain(benchmark, part) if explain else ""
        if url:
            links.append((_LABELS[part], url))
    return links


def exclusion_explain_url(benchmark, policy: str | None) -> str:
    """The page explaining a policy's effect on this benchmark (of a composed policy: its first part offering one;
    "" when no part's app offers one)."""
    links = exclusion_explain_links(benchmark, policy)
    return links[0][1] if links else ""


def exclusion_sources(benchmark, policy: str | None) -> str:
    """What a policy draws on for this benchmark, in words, each part's joined by "; " ("" for none or when its
    apps do not say)."""
    said = []
    for part in exclusion_policy_parts(policy):
        sources = _SOURCES.get(part)
        text = sources(benchmark, part) if sources else ""
        if text and text not in said:
            said.append(text)
    return "; ".join(said)


def excluded_item_ids(benchmark, policy: str | None, campaigns: Iterable[int] | None = None) -> set[int] | None:
    """Item ids the policy leaves out of this benchmark's leaderboards (a composed policy: the union of its parts');
    None for no policy. `campaigns` names what a policy draws on instead of its default (audits: the settled
    campaigns); each part takes it, and a part that draws on no campaign ignores it.

    Raises ValueError for a name no app registered.
    """
    parts = exclusion_policy_parts(policy)
    if not parts:
        return None
    for part in parts:
        if part not in _PROVIDERS:
            raise ValueError(exclusion_policy_unknown() % {"value": part})
    excluded: set[int] = set()
    for part in parts:
        excluded |= (
            _PROVIDERS[part](benchmark, part) if campaigns is None else _PROVIDERS[part](benchmark, part, campaigns)
        )
    return excluded


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
        "parts": exclusion_policy_parts(policy),
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


def exclusion_facts(box: Mapping | None) -> dict | None:
    """What a page's exports say of its exclusion box (`exclusion_box`'s shape, or the checklist leaderboard's):
    the policy and its parts, its label, the items left out, Kendall's tau and the swapped pairs as [up, down];
    None without a policy."""
    if not box:
        return None
    swaps = [_pair(s) for s in box["swaps"]]
    return {
        "policy": box["policy"],
        "parts": exclusion_policy_parts(box["policy"]),
        "label": box["label"],
        "n_excluded": box["n_excluded"],
        "tau": box["tau"],
        "swaps": swaps,
    }


def _pair(swap) -> list[str]:
    """[up, down] of a swap: a dict (exclusion_box), a RankSwap or an (up, down) tuple."""
    if isinstance(swap, Mapping):
        return [swap["up"], swap["down"]]
    if hasattr(swap, "up"):
        return [swap.up, swap.down]
    return list(swap)
