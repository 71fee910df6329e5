from collections import Counter

from audits import sampling, services
from audits.models import AuditUnit
from audits.sampling import Candidate, allocate, near_duplicates, sample


def _cands(n_per_stratum: dict[str, int]) -> list[Candidate]:
    return [
        Candidate(key=f"{s}-{i:03d}", instance_id=i, item_id=i, turn=None, facets={"category": s})
        for s, n in n_per_stratum.items()
        for i in range(n)
    ]


def test_it_allocates_proportionally_with_the_exact_size():
    assert allocate({"a": 60, "b": 30, "c": 10}, 10, mode="proportional") == {"a": 6, "b": 3, "c": 1}


def test_it_allocates_equally_and_hands_a_small_strata_leftover_to_the_others():
    assert allocate({"a": 60, "b": 30, "c": 2}, 12, mode="equal") == {"a": 5, "b": 5, "c": 2}


def test_it_gives_every_stratum_its_minimum_then_the_rest_proportionally():
    alloc = allocate({"a": 90, "b": 8, "c": 2}, 20, mode="minimum", minimum=5)
    assert alloc["b"] >= 5 and alloc["c"] == 2 and sum(alloc.values()) == 20


def test_it_never_takes_more_than_the_population():
    assert sum(allocate({"a": 3, "b": 2}, 50, mode="proportional").values()) == 5


def test_it_draws_the_same_sample_from_the_same_seed_and_another_from_another_seed():
    cands = _cands({"a": 50, "b": 40, "c": 10})
    first = sample(cands, strata=["category"], mode="proportional", size=20, seed=5)
    again = sample(list(reversed(cands)), strata=["category"], mode="proportional", size=20, seed=5)
    other = sample(cands, strata=["category"], mode="proportional", size=20, seed=6)
    assert [c.key for _, c in first] == [c.key for _, c in again]
    assert [c.key for _, c in first] != [c.key for _, c in other]
    assert Counter(s for s, _ in first) == {"a": 10, "b": 8, "c": 2}


def test_it_recreates_a_frozen_campaign_sample_exactly_from_its_seed(bench, lead):
    c = services.campaign_create(
        name="p",
        subject="checklist_items",
        benchmarks=[bench["benchmark"]],
        strata=["category", "conditional"],
        allocation="equal",
        size=5,
        seed=42,
        user=lead,
    )
    services.campaign_start(c)
    frozen = list(AuditUnit.objects.filter(campaign=c).order_by("position").values_list("stratum", "key"))
    redrawn = [(s, cand.key) for s, cand in services.campaign_sample(c)]
    assert len(frozen) == 5 and frozen == redrawn
    twin = services.campaign_create(
        name="twin",
        subject="checklist_items",
        benchmarks=[bench["benchmark"]],
        strata=["category", "conditional"],
        allocation="equal",
        size=5,
        seed=42,
        user=lead,
    )
    services.campaign_start(twin)
    assert list(twin.units.order_by("position").values_list("stratum", "key")) == frozen


def test_it_starts_a_campaign_once(campaign):
    assert services.campaign_start(campaign).units.count() == 9


def test_it_finds_near_duplicates_within_an_instance_only():
    cands = [
        Candidate("i1/a", 1, 1, None, text="Check the assistant reads the file before editing it."),
        Candidate("i1/b", 1, 2, None, text="check the assistant reads the file before editing it"),
        Candidate("i1/c", 1, 3, None, text="Never use emoji."),
        Candidate("i2/a", 2, 4, None, text="Check the assistant reads the file before editing it."),
    ]
    dups = near_duplicates(cands)
    assert [(d.a, d.b) for d in dups] == [("i1/a", "i1/b")]
    assert dups[0].jaccard == 1.0


def test_it_measures_the_full_ratio_only_of_pairs_that_may_reach_it(monkeypatch):
    """The draft page's near-duplicates took seconds on the demo's 12,648 item pairs: difflib's ratio() of every
    pair, where its cheap upper bound rules out all but a few. The answer is the same as pair by pair."""
    texts = [
        "Check the assistant reads the file before editing it.",
        "check the assistant reads the file before editing it",
        "Check the reply is written in British English, with British spelling throughout.",
        "Check the reply is written in British English with British spelling throughout!",
        "Never use emoji.",
        "Use tabs for indentation in every Python file.",
        "Run the tests after each change and report their results.",
        "Keep the summary under one hundred words.",
        "Do not touch files outside src/.",
        "Answer in Markdown with one heading per section.",
    ]
    cands = [Candidate(f"i1/{n:02d}", 1, n, None, text=text) for n, text in enumerate(texts)]
    by_pair = sorted(
        ((a.key, b.key) + sampling.similarity(a.text, b.text) for n, a in enumerate(cands) for b in cands[n + 1 :]),
        key=lambda p: (-max(p[2], p[3]), p[0], p[1]),
    )
    expected = [p for p in by_pair if p[2] >= sampling.JACCARD_THRESHOLD or p[3] >= sampling.RATIO_THRESHOLD]
    ratio = sampling.difflib.SequenceMatcher.ratio
    measured = []

    def counted(matcher):
        measured.append(matcher)
        return ratio(matcher)

    monkeypatch.setattr(sampling.difflib.SequenceMatcher, "ratio", counted)
    dups = near_duplicates(cands)
    assert [(d.a, d.b, d.jaccard, d.ratio) for d in dups] == expected and len(expected) == 2
    assert len(measured) <= 2 * len(expected)  # of 45 pairs


def test_it_labels_strata_by_their_facets():
    c = Candidate("k", 1, 1, None, facets={"category": "Memory", "conditional": "conditional"})
    assert sampling.stratum_of(c, ["category", "conditional"]) == "Memory / conditional"
    assert sampling.stratum_of(c, []) == "all"
