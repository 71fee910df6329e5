"""Each kind's page and its API read one page state (runs.selectors.<kind>): the same query string gives the same
numbers on both, and an invalid parameter gets the page's default with an error there and a 400 with the same words
from the API."""

import json
import re
from dataclasses import asdict
from html import unescape
from pathlib import Path

import pytest
from django.http import QueryDict
from django.urls import reverse
from django.utils.html import escape

from runs.exclusions import exclusion_policies
from runs.ingest import Options, Source, ingest
from runs.models import Benchmark, BenchmarkKind

from . import test_conflict as conflict
from .test_views_choice import make_study as make_choice_study
from .test_views_hierarchy import add_run, flip_sample_0

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[1] / "fixtures"


def _as_json(value):
    """A page's dataclass rows as the API writes them (tuples become lists)."""
    return json.loads(json.dumps(value))


def _unknown_policy() -> str:
    return "unknown exclusion policy 'nope'; one of: none, " + ", ".join(exclusion_policies())


def _page(client, name, slug, query):
    response = client.get(reverse(f"runs:{name}", kwargs={"slug": slug}), query)
    assert response.status_code == 200
    return response


def _same_error(client, page_name, slug, api, api_query, field, value, expected=None):
    """The page answers 200 with its default and shows the error; the API answers 400 with the same words."""
    page = _page(client, page_name, slug, {field: value})
    answer = client.get(api, {**api_query, field: value})
    assert answer.status_code == 400, (field, value)
    assert page.context["errors"][field] == answer.json()[field], (field, value)
    if expected is not None:
        assert answer.json()[field] == [expected]
    assert escape(page.context["errors"][field][0]) in page.content.decode(), (field, value)
    return page


# dialogue ------------------------------------------------------------------------------
@pytest.fixture
def dialogue(db):
    """EvolIF logs recorded at patience 2 (tests/runs/test_api_dialogue.py works out their numbers)."""
    ingest(
        "evolif-dialogs",
        [Source.of(ROOT / "evolif" / "dialog_1.jsonl"), Source.of(ROOT / "evolif" / "dialog_2.jsonl")],
        Options(),
    )
    ingest(
        "evolif-eval",
        [Source.of(ROOT / "evolif" / "eval_1.jsonl"), Source.of(ROOT / "evolif" / "eval_2.jsonl")],
        Options(model="acme", run="acme-r1"),
    )
    return Benchmark.objects.get(kind=BenchmarkKind.DIALOGUE).slug


DIALOGUE_API = "/api/dialogue-metrics/"
METRICS = ("dialogues", "csr", "isr", "act_len", "act_acc", "act_succ", "lss", "rob", "rec", "rec_dialogues")


@pytest.mark.parametrize("patience", [None, 1, 2])
def test_the_dialogue_page_and_api_agree_at_every_patience(reviewer_client, dialogue, patience):
    query = {"run": "acme-r1", **({"patience": patience} if patience else {})}
    page = _page(reviewer_client, "dialogue-metrics", dialogue, query)
    body = reviewer_client.get(DIALOGUE_API, query).json()
    [row] = page.context["rows"]
    assert {k: getattr(row.metrics, k) for k in METRICS} == {k: body[k] for k in METRICS}
    assert [p.percent for p in row.survival] == body["survival"]
    # no patience asked: both count every dialogue at the recorded one (2), and both say so
    assert page.context["patience"] == body["patience"] == (patience or 2)
    assert page.context["recorded"] == body["recorded_patience"] == 2
    assert {"patience": row.ended_by_patience, "script_end": row.ended_by_script, "stopped": row.ended_stopped} == body[
        "ended_by"
    ]


def test_a_patience_above_the_recorded_one_is_refused_in_the_same_words(reviewer_client, dialogue):
    page = _same_error(reviewer_client, "dialogue-metrics", dialogue, DIALOGUE_API, {"run": "acme-r1"}, "patience", 3)
    assert "higher than the patience 2" in page.context["errors"]["patience"][0]
    assert page.context["patience"] == 2  # the page shows the recorded patience instead
    assert "Showing patience 2 instead." in page.content.decode()


@pytest.mark.parametrize(
    "field, value, expected",
    [
        ("patience", "0", "Ensure this value is greater than or equal to 1."),
        ("patience", "many", "Enter a whole number."),
        ("judge", "ghost", "No judge named 'ghost' scored this benchmark."),
        ("exclude", "nope", None),
        ("sort", "-nope", None),
    ],
)
def test_an_invalid_dialogue_parameter_gets_the_same_error_on_page_and_api(
    reviewer_client, dialogue, field, value, expected
):
    page = _same_error(
        reviewer_client, "dialogue-metrics", dialogue, DIALOGUE_API, {"run": "acme-r1"}, field, value, expected
    )
    plain = _page(reviewer_client, "dialogue-metrics", dialogue, {})
    assert [r.metrics for r in page.context["rows"]] == [
        r.metrics for r in plain.context["rows"]
    ]  # the default applies
    if field == "exclude":
        assert page.context["errors"]["exclude"] == [_unknown_policy()]


# hierarchy -----------------------------------------------------------------------------
@pytest.fixture
def hierarchy(tmp_path):
    """One model's ordinal and scalar runs of the small ManyIH fixture (tests/runs/test_views_hierarchy.py)."""
    ingest("manyih-data", [Source.of(ROOT / "manyih" / "coding_small.json")], Options())
    add_run(tmp_path, "coder · ordinal", "ordinal")
    add_run(tmp_path, "coder · scalar", "scalar", change=flip_sample_0)
    return Benchmark.objects.get(kind=BenchmarkKind.HIERARCHY).slug


HIERARCHY_API = "/api/hierarchy-metrics/"


@pytest.mark.parametrize(
    "query",
    [
        {},
        {"by": "run"},
        {"by": "run", "judge": "manyih-style-checker"},
        {"run": "coder · scalar"},
        {"a": "coder · scalar", "b": "coder · ordinal", "by": "run"},
    ],
)
def test_the_hierarchy_page_and_api_agree_on_the_same_query(reviewer_client, hierarchy, query):
    page = _page(reviewer_client, "hierarchy-metrics", hierarchy, query)
    body = reviewer_client.get(HIERARCHY_API, {"benchmark": hierarchy, **query}).json()
    assert body["judge"] == page.context["judge"].name and body["by"] == page.context["by"]
    ties = page.context["ties"]  # each row's rank interval and tie group, as the page shows them
    assert body["rows"] == _as_json([asdict(r) | ties[r.label].fields() for r in page.context["rows"]])
    assert body["by_tiers"] == _as_json([asdict(r) for r in page.context["tier_rows"]])
    assert [(g["label"], g["group"], g["rate"]) for g in body["style_group_rows"]] == [
        (g.label, g.group, g.rate) for g in page.context["group_rates"]
    ]
    comparison = page.context["comparison"]
    assert body["comparison"] == (None if comparison is None else _as_json(asdict(comparison)))


def test_one_runs_figures_are_its_row_on_the_page(reviewer_client, hierarchy):
    page = _page(reviewer_client, "hierarchy-metrics", hierarchy, {"run": "coder · ordinal", "by": "run"})
    body = reviewer_client.get(HIERARCHY_API, {"run": "coder · ordinal"}).json()
    [row] = page.context["rows"]
    assert (body["samples"], body["acc"], body["acc_test"], body["acc_style"]) == (
        row.n,
        row.acc,
        row.acc_test,
        row.acc_style,
    )
    assert body["acc_ci"] == list(row.acc_ci)


@pytest.mark.parametrize(
    "field, value, expected",
    [
        ("judge", "ghost", "No judge named 'ghost' scored this benchmark."),
        ("run", "nope", "No run of this benchmark is labelled 'nope'."),
        ("by", "sample", None),
        ("tiers", "-1", "Ensure this value is greater than or equal to 0."),
        ("exclude", "nope", None),
    ],
)
def test_an_invalid_hierarchy_parameter_gets_the_same_error_on_page_and_api(
    reviewer_client, hierarchy, field, value, expected
):
    page = _same_error(
        reviewer_client, "hierarchy-metrics", hierarchy, HIERARCHY_API, {"benchmark": hierarchy}, field, value, expected
    )
    plain = _page(reviewer_client, "hierarchy-metrics", hierarchy, {})
    assert page.context["rows"] == plain.context["rows"]


# conflict ------------------------------------------------------------------------------
@pytest.fixture
def conflict_study(tmp_path):
    """The hand-made OctoBench-Conflict study of tests/runs/test_conflict.py (judges j1 and j2)."""
    records = [{"type": "benchmark", "slug": conflict.SLUG, "name": "Octo conflict", "kind": "conflict"}]
    records += [conflict.instance(k, *v) for k, v in conflict.INSTANCES.items()]
    for run, sides in conflict.FOLLOWED.items():
        records.append({"type": "run", "label": run, "model": run.split("-")[0]})
        for key, side in sides.items():
            records += [
                {"type": "attempt", "run": run, "instance": key, "response": f"reply of {run}"},
                conflict.verdict(run, key, side),
            ]
    records.append(conflict.verdict("m2-r1", "c1", "B", judge="j2"))
    ingest("native", [conflict.write(tmp_path, records)], Options())
    return conflict.SLUG


CONFLICT_API = "/api/conflict-metrics/"


@pytest.mark.parametrize("query", [{}, {"by": "run"}, {"run": ["m1-r1", "m2-r1"]}, {"judge": "j2", "by": "run"}])
def test_the_conflict_page_and_api_agree_on_the_same_query(reviewer_client, conflict_study, query):
    page = _page(reviewer_client, "conflict-metrics", conflict_study, query)
    body = reviewer_client.get(CONFLICT_API, {"benchmark": conflict_study, **query}).json()
    assert body["judge"] == page.context["judge"].name and body["attempts"] == len(page.context["rows"])
    assert [
        (r["label"], r["type"], r["n"], r["counts"], r["first"], r["second"], r["neither"])
        for r in body["resolution_rates"]
    ] == [(r.label, r.type, r.n, r.counts, r.first, r.second, r.neither) for r in page.context["rates"]]
    page_sp = {
        (label, scenario): cell.sp_rate
        for label, cells, *_ in page.context["scenario_table"]
        for scenario, cell in zip(page.context["scenarios"], cells)
        if cell is not None
    }
    assert {(r["label"], r["scenario"]): r["sp_rate"] for r in body["sp_rates"]} == page_sp


@pytest.mark.parametrize(
    "field, value, expected",
    [
        ("judge", "ghost", "No judge named 'ghost' scored this benchmark."),
        ("run", "nope", "No run of this benchmark is labelled 'nope'."),
        ("exclude", "nope", None),
    ],
)
def test_an_invalid_conflict_parameter_gets_the_same_error_on_page_and_api(
    reviewer_client, conflict_study, field, value, expected
):
    page = _same_error(
        reviewer_client,
        "conflict-metrics",
        conflict_study,
        CONFLICT_API,
        {"benchmark": conflict_study},
        field,
        value,
        expected,
    )
    assert page.context["rates"] == _page(reviewer_client, "conflict-metrics", conflict_study, {}).context["rates"]


def test_the_conflict_api_answers_aggregates_only_and_needs_a_benchmark(reviewer_client, conflict_study, client):
    drilled = reviewer_client.get(CONFLICT_API, {"benchmark": conflict_study, "label": "m1", "type": "UQ vs SP"}).json()
    assert "examples" not in drilled and set(drilled) >= {"resolution_rates", "sp_rates"}
    assert reviewer_client.get(CONFLICT_API).status_code == 400
    assert reviewer_client.get(CONFLICT_API, {"benchmark": "nope"}).status_code == 404
    assert client.get(CONFLICT_API, {"benchmark": conflict_study}).status_code in (401, 403)


# choice --------------------------------------------------------------------------------
CHOICE_API = "/api/choice-metrics/"


@pytest.mark.parametrize("view", ["exact", "normalised"])
def test_the_choice_page_and_api_agree_on_a_runs_row(reviewer_client, view):
    make_choice_study()
    page = _page(reviewer_client, "choice-metrics", "guidebench", {"run": "alpha", "view": view})
    body = reviewer_client.get(CHOICE_API, {"run": "alpha", "view": view}).json()
    [row] = page.context["run_rows"]
    assert (body["overall_accuracy"], body["n"], body["unanswered"]) == (row.accuracy, row.n, row.unanswered)
    assert {name: (c["accuracy"], c["f1"]) for name, c in body["categories"].items()} == {
        name: (c.accuracy, c.f1) for name, c in row.categories.items()
    }


def test_an_invalid_choice_view_gets_the_default_on_the_page_and_the_same_words_from_the_api(reviewer_client):
    make_choice_study()
    page = _page(reviewer_client, "choice-metrics", "guidebench", {"view": "fuzzy"})
    answer = reviewer_client.get(CHOICE_API, {"run": "alpha", "view": "fuzzy"})
    assert page.context["state"]["view"] == "exact"
    assert answer.status_code == 400 and answer.json()["view"] == page.context["errors"]["view"]


# control characters --------------------------------------------------------------------
KINDS = {  # kind: (its fixture, the page, the API, the API's query naming the benchmark or run)
    "dialogue": ("dialogue", "dialogue-metrics", DIALOGUE_API, lambda slug: {"run": "acme-r1"}),
    "hierarchy": ("hierarchy", "hierarchy-metrics", HIERARCHY_API, lambda slug: {"benchmark": slug}),
    "conflict": ("conflict_study", "conflict-metrics", CONFLICT_API, lambda slug: {"benchmark": slug}),
    "choice": (None, "choice-metrics", CHOICE_API, lambda slug: {"run": "alpha"}),
}


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize(
    "field, value", [("run", "acme\x00-r1"), ("judge", "\x00"), ("group", "a\x1fb"), ("benchmark", "x\x00")]
)
def test_a_control_character_in_a_parameter_is_noted_on_the_page_and_refused_by_the_api(
    request, reviewer_client, kind, field, value
):
    fixture, page_name, api, api_query = KINDS[kind]
    if fixture:
        slug = request.getfixturevalue(fixture)
    else:
        make_choice_study()
        slug = "guidebench"
    expected = (
        f"'{field}' holds a control character (e.g. a NUL byte): no run, judge, group or filter is named with "
        "one, so it was left out."
    )
    page = _same_error(reviewer_client, page_name, slug, api, api_query(slug), field, value, expected)
    assert value not in page.content.decode()
    if kind != "choice":
        assert page.context["runs"] == page.context["all_runs"]  # the parameter was left out: its default applies


def test_page_and_api_refuse_another_kinds_benchmark_alike(reviewer_client, dialogue):
    assert reviewer_client.get(reverse("runs:hierarchy-metrics", kwargs={"slug": dialogue})).status_code == 404
    assert reviewer_client.get(HIERARCHY_API, {"benchmark": dialogue}).status_code == 404
    assert reviewer_client.get(reverse("runs:conflict-metrics", kwargs={"slug": dialogue})).status_code == 404
    assert reviewer_client.get(CONFLICT_API, {"benchmark": dialogue}).status_code == 404


def test_the_removed_json_twin_of_the_hierarchy_page_is_gone(reviewer_client, hierarchy):
    assert reviewer_client.get(f"/b/{hierarchy}/hierarchy/api/").status_code == 404


def _sort_links(html: str) -> list[str]:
    """The query strings of a page's column-header links that set a sort."""
    return [unescape(q) for q in re.findall(r'<th[^>]*><a href="\?([^"]*\bsort=[^"]*)"', html)]


def test_a_column_header_replaces_the_sort_and_keeps_the_rest(reviewer_client, dialogue):
    """Found by walking the pages in Chromium: each click on a dialogue or leaderboard column header added one more
    `sort` to the URL (`?sort=label&sort=label&...`), so a permalink grew with every click. A header link now
    replaces the sort of the current state and keeps its other parameters."""
    ingest("octobench-instances", [Source.of(ROOT / "octobench" / "instances.jsonl")], Options())
    ingest("octobench-scores", [Source.of(ROOT / "octobench" / "scores.json")], Options(model="m", judge="j"))
    checklist = Benchmark.objects.get(kind=BenchmarkKind.CHECKLIST).slug
    for name, slug, query in (
        ("dialogue-metrics", dialogue, {"sort": "label", "patience": "1"}),
        ("checklist-leaderboard", checklist, {"sort": "model", "ci": "on"}),
    ):
        links = _sort_links(_page(reviewer_client, name, slug, query).content.decode())
        assert len(links) >= 2, name
        for link in links:
            params = QueryDict(link)
            assert len(params.getlist("sort")) == 1, (name, link)
            assert {k: v for k, v in params.items() if k != "sort"} == {k: v for k, v in query.items() if k != "sort"}
        assert {QueryDict(link)["sort"] for link in links} > {query["sort"]}, name


def test_a_number_column_sorts_high_first_then_reverses_and_the_sorted_one_shows_its_arrow(reviewer_client):
    """One rule (runs.templatetags.sorting) for the leaderboard's and the choice pages' headers: the leaderboard
    wrote it out seven times and showed no arrow on the column it was sorted by."""
    ingest("octobench-instances", [Source.of(ROOT / "octobench" / "instances.jsonl")], Options())
    ingest("octobench-scores", [Source.of(ROOT / "octobench" / "scores.json")], Options(model="m", judge="j"))
    checklist = Benchmark.objects.get(kind=BenchmarkKind.CHECKLIST).slug
    html = _page(reviewer_client, "checklist-leaderboard", checklist, {"sort": "-isr"}).content.decode()
    heads = {
        unescape(label): QueryDict(unescape(query))["sort"]
        for query, label in re.findall(r'<th[^>]*><a href="\?([^"]*)"[^>]*>([^<]+)</a>', html)
    }
    assert heads["ISR % ↓"] == "isr"  # sorted high first: the next click reverses
    assert heads["CSR %"] == "-csr"  # another number: high first
    assert heads["Model"] == "model" and heads["Instances"] == "-n"  # one order each
    assert 'aria-current="true">ISR % ↓</a>' in html
    html = _page(reviewer_client, "checklist-leaderboard", checklist, {"sort": "isr"}).content.decode()
    assert re.search(r'<a href="\?[^"]*sort=-isr[^"]*" aria-current="true">ISR % ↑</a>', html)
