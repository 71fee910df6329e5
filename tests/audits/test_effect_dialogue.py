"""Audit exclusion policies on the EvolIF dialogue metrics: the page and /api/dialogue-metrics/.

The small fixture: two dialogues (d1, d2) of three turns, two constraints per turn (format, length), patience 3.
alpha fails both constraints of d1's turn 2 and passes everything else: CSR 5/6, ISR 5/6.
beta passes d1 and fails `length` on d2's turn 3: CSR 5.5/6, ISR 5/6. Ranked by CSR, beta is first.
Annotators say d1's turn-2 query does not express its constraints: with its two constraints left out, that
turn is not counted; alpha then has five perfect turns (CSR 100) and moves above beta (4.5/5 = 90).
"""

import pytest
from django.utils.html import escape

from audits import services
from runs.demo import SCALES, evolif_plan
from runs.exclusions import exclusion_policies
from runs.ingest import Source, ingest
from runs.metrics import dialogue as metrics
from runs.models import (
    AgentModel,
    Attempt,
    Benchmark,
    BenchmarkKind,
    ChecklistItem,
    Instance,
    Judge,
    JudgeKind,
    Run,
    Verdict,
)
from runs.selectors.dialogue import dialogue_judges, dialogues_select
from runs.services import rollups_rebuild_for_attempts

from .conftest import client_for, label_all

SLUG = "evolif-audit"
PAGE = f"/b/{SLUG}/dialogue/"
API = "/api/dialogue-metrics/"
FLAGGED = f"{SLUG}/d1/turn-002"
FAILS = {"alpha": {("d1", 2, "format"), ("d1", 2, "length")}, "beta": {("d2", 3, "length")}}


def _unknown_policy() -> str:
    """What the page and the API say of ?exclude=nope (runs.selectors.state.KindQuery)."""
    return "unknown exclusion policy 'nope'; one of: none, " + ", ".join(exclusion_policies())


@pytest.fixture
def study(db):
    benchmark = Benchmark.objects.create(slug=SLUG, name="EvolIF audit", kind=BenchmarkKind.DIALOGUE)
    judge = Judge.objects.create(name="evolif-log", kind=JudgeKind.LOGGED)
    items = {}
    for name in ("d1", "d2"):
        spec = {
            "turns": [{"turn": t, "active_topic": "a", "user_query_verified": f"{name} query {t}"} for t in (1, 2, 3)]
        }
        instance = Instance.objects.create(benchmark=benchmark, external_id=name, spec=spec, content_hash="h")
        for turn in (1, 2, 3):
            for pos, group in enumerate(("format", "length")):
                items[(name, turn, group)] = ChecklistItem.objects.create(
                    instance=instance,
                    key=f"t{turn}:{group}",
                    turn=turn,
                    group=group,
                    position=pos,
                    description=f"Answer in the {group} asked for <b>here</b>",
                    content_hash="h",
                )
    attempts = []
    for model in ("alpha", "beta"):
        run = Run.objects.create(
            benchmark=benchmark,
            model=AgentModel.objects.create(name=model),
            label=f"{model}-r1",
            settings={"patience": 3},
        )
        for instance in benchmark.instances.all():
            attempt = Attempt.objects.create(
                run=run,
                instance=instance,
                response="...",
                outcome={"patience": 3, "ended_by": "script_end", "ended_turn": 3},
            )
            attempts.append(attempt.id)
            for (name, turn, group), item in items.items():
                if name == instance.external_id:
                    result = "fail" if (name, turn, group) in FAILS[model] else "pass"
                    Verdict.objects.create(attempt=attempt, item=item, judge=judge, result=result)
    rollups_rebuild_for_attempts(attempts)
    return benchmark


def _audit(benchmark, lead, annotators, flagged=(FLAGGED,)):
    """Every turn of the study audited by both annotators; they say the `flagged` queries miss their constraints."""
    campaign = services.campaign_start(
        services.campaign_create(
            name="queries",
            subject="dialogue_queries",
            benchmarks=[benchmark],
            strata=["benchmark"],
            allocation="proportional",
            size=6,
            seed=3,
            user=lead,
        )
    )
    assert campaign.units.count() == 6
    label_all(campaign, annotators, lambda user, unit: {"expresses": "no" if unit.key in flagged else "yes"})
    return campaign


@pytest.fixture
def audited(study, lead, annotator_a, annotator_b):
    _audit(study, lead, (annotator_a, annotator_b))
    return study


def _csr(response):
    return {r.label: r.metrics.csr for r in response.context["rows"]}


def test_a_flagged_query_changes_csr_and_the_ranking_on_the_page(audited, lead):
    client = client_for(lead)
    plain = client.get(PAGE)
    assert plain.context["exclusion"] is None and 'id="exclusion"' not in plain.content.decode()
    assert _csr(plain) == {"alpha": pytest.approx(500 / 6), "beta": pytest.approx(550 / 6)}

    page = client.get(PAGE, {"exclude": "adjudicated_invalid"})
    html = page.content.decode()
    assert page.status_code == 200
    assert _csr(page) == {"alpha": pytest.approx(100.0), "beta": pytest.approx(90.0)}
    assert {r.label: r.metrics.turns for r in page.context["rows"]} == {"alpha": 5, "beta": 5}
    exclusion = page.context["exclusion"]
    assert exclusion["n_excluded"] == 2 and exclusion["tau"] == -1.0 and exclusion["dropped_turns"] == 2
    lines = exclusion["lines"]
    assert (lines["alpha"].rank_before, lines["alpha"].rank_after) == (2, 1)
    assert (lines["beta"].rank_before, lines["beta"].rank_after) == (1, 2)
    assert lines["beta"].value_before == pytest.approx(550 / 6)
    assert [(s["up"], s["down"]) for s in exclusion["swaps"]] == [("alpha", "beta")]
    # alpha failed both constraints of the flagged turn, beta passed them: both are behind the swap
    assert sorted(d["key"] for d in exclusion["swaps"][0]["items"]) == ["t2:format", "t2:length"]
    assert 'id="exclusion"' in html and "Audit exclusion: final status invalid" in html
    assert "2 constraints of flagged user queries left out" in html and "-1.000" in html
    assert "2 turns with no constraint left are not counted" in html
    assert "ranking by CSR %" in html and "Ranked by CSR %, the first metric column" in html
    assert "alpha now above beta" in html and "d1 turn 2 · format" in html
    assert "▲ 1" in html and "▼ 1" in html and "▼ -1" not in html
    assert 'id="excluded-items"' in html and "&lt;b&gt;here&lt;/b&gt;" in html and "<b>here</b>" not in html
    assert ">Show every item</a>" in html and 'href="?"' in html
    assert '<option value="adjudicated_invalid" selected>' in html
    assert "With every item" in html


def test_the_ranking_follows_the_metric_the_table_is_sorted_by(audited, lead):
    page = client_for(lead).get(PAGE, {"exclude": "flagged_by_both", "sort": "-isr"})
    exclusion = page.context["exclusion"]
    assert page.context["rank_metric"] == ("isr", "ISR %")
    # tied on ISR (5 of 6 turns each) before; alpha 5/5 against beta 4/5 after: the tie is broken
    assert (exclusion["lines"]["alpha"].rank_before, exclusion["lines"]["alpha"].rank_after) == (1.5, 1)
    assert [(s["up"], s["down"]) for s in exclusion["swaps"]] == [("alpha", "beta")]
    assert "ranking by ISR % before vs after" in page.content.decode()


def test_without_a_policy_the_numbers_are_those_before_the_audit(study, lead, annotator_a, annotator_b):
    client = client_for(lead)
    before_page = _csr(client.get(PAGE, {"by": "run"}))
    before_api = client.get(API, {"run": "alpha-r1"}).json()
    _audit(study, lead, (annotator_a, annotator_b))
    for params in ({}, {"exclude": "none"}):
        page = client.get(PAGE, {"by": "run", **params})
        assert _csr(page) == before_page and page.context["exclusion"] is None
        assert client.get(API, {"run": "alpha-r1", **params}).json() == before_api
    assert before_api["exclude"] == "none" and before_api["excluded_items"] == 0 and before_api["excluded_turns"] == 0


def test_the_api_recomputes_a_models_metrics_under_a_policy(audited, lead):
    api = client_for(lead)
    plain = api.get(API, {"run": "alpha-r1"}).json()
    assert plain["csr"] == pytest.approx(500 / 6) and plain["isr"] == pytest.approx(500 / 6)
    assert plain["constraints"] == pytest.approx({"format": 500 / 6, "length": 500 / 6})
    body = api.get(API, {"run": "alpha-r1", "exclude": "adjudicated_invalid"}).json()
    assert body["exclude"] == "adjudicated_invalid" and body["excluded_items"] == 2 and body["excluded_turns"] == 1
    assert body["csr"] == pytest.approx(100.0) and body["isr"] == pytest.approx(100.0)
    assert (body["act_len"], body["lss"], body["rob"]) == pytest.approx((2.5, 2.5, 100.0))
    assert body["constraints"] == pytest.approx({"format": 100.0, "length": 100.0})
    beta = api.get(API, {"run": "beta-r1", "exclude": "flagged_by_either"}).json()
    assert beta["csr"] == pytest.approx(90.0) and beta["excluded_turns"] == 1  # now below alpha's 100


def test_one_annotator_flagging_is_enough_for_flagged_by_either_only(study, lead, annotator_a, annotator_b):
    campaign = services.campaign_start(
        services.campaign_create(
            name="queries",
            subject="dialogue_queries",
            benchmarks=[study],
            strata=["benchmark"],
            allocation="proportional",
            size=6,
            seed=3,
            user=lead,
        )
    )
    label_all(
        campaign,
        [annotator_a, annotator_b],
        lambda user, unit: {"expresses": "no" if user == annotator_a and unit.key == FLAGGED else "yes"},
    )
    # policies read settled campaigns: the lead settles the one dispute (a's flag stays a flag)
    services.unit_adjudicate(campaign.units.get(state="disputed"), lead=lead, final_status="valid")
    client = client_for(lead)
    assert client.get(API, {"run": "alpha-r1", "exclude": "flagged_by_either"}).json()["csr"] == pytest.approx(100.0)
    both = client.get(API, {"run": "alpha-r1", "exclude": "flagged_by_both"}).json()
    assert both["excluded_items"] == 0 and both["csr"] == pytest.approx(500 / 6)
    page = client.get(PAGE, {"exclude": "flagged_by_both"})
    assert page.context["exclusion"]["tau"] == 1.0 and page.context["exclusion"]["swaps"] == []
    assert "0 constraints of flagged user queries left out" in page.content.decode()


def test_an_unknown_policy_is_refused_with_a_clear_message(audited, lead):
    client = client_for(lead)
    api = client.get(API, {"run": "alpha-r1", "exclude": "nope"})
    assert api.status_code == 400 and "unknown exclusion policy 'nope'" in api.json()["exclude"][0]
    assert "adjudicated_invalid" in api.json()["exclude"][0]
    page = client.get(PAGE, {"exclude": "nope", "by": "run"})  # the form's error, every item, the other filters kept
    assert page.status_code == 200 and page.context["exclusion"] is None and page.context["by"] == "run"
    assert page.context["errors"]["exclude"] == [_unknown_policy()]  # the API's words (runs.selectors.state)
    assert escape(_unknown_policy()) in page.content.decode()
    assert _csr(page) == {"alpha-r1": pytest.approx(500 / 6), "beta-r1": pytest.approx(550 / 6)}


def test_the_other_dialogue_pages_offer_no_policy_and_ignore_one(audited, lead):
    client = client_for(lead)
    for page in ("survival/", "groups/", "dialogues/"):
        response = client.get(f"{PAGE}{page}", {"exclude": "adjudicated_invalid"})
        html = response.content.decode()
        assert response.status_code == 200 and 'name="exclude"' not in html and "Audit exclusion" not in html
        assert sum(d.length for d in response.context["dialogues"]) == 12


# the verdict path against the rollups, on the demo's EvolIF study (4 dialogues of 10-18 turns, 2 runs, patience 3)
@pytest.fixture
def demo_study(db, tmp_path):
    for step in evolif_plan(1, SCALES["small"], tmp_path).steps:
        ingest(step.format, [Source.of(p) for p in step.paths], step.options)
    return Benchmark.objects.get(slug="evolif")


def test_the_verdict_path_gives_the_rollups_dialogues_when_nothing_is_excluded(demo_study):
    judges = dialogue_judges(demo_study)
    assert judges
    # an edge the logs can produce: every verdict of one turn is "na" (the turn has a row with nothing applicable)
    verdict = Verdict.objects.filter(
        attempt__run__benchmark=demo_study, judge=judges[0], item__turn__isnull=False
    ).first()
    Verdict.objects.filter(attempt=verdict.attempt, item__turn=verdict.item.turn, judge=judges[0]).update(result="na")
    rollups_rebuild_for_attempts([verdict.attempt_id])
    for judge in judges:
        rollups = dialogues_select(benchmark=demo_study, judge=judge)
        verdicts = dialogues_select(benchmark=demo_study, judge=judge, excluded_items={-1})
        assert len(rollups) >= 8 and any(not s for d in rollups for s in d.successes)
        assert any(t.n_applicable == 0 for d in verdicts for t in d.turns)
        assert verdicts == rollups
        assert metrics.rows_by(metrics.resimulate(verdicts, 2)) == metrics.rows_by(metrics.resimulate(rollups, 2))


def test_excluding_items_gives_what_rollups_without_their_verdicts_give(demo_study):
    judge = dialogue_judges(demo_study)[0]
    instance = demo_study.instances.order_by("external_id").first()
    # every constraint of the instance's turn 2, and every constraint of one group everywhere
    group = instance.items.filter(turn=3).order_by("position").values_list("group", flat=True).first()
    assert group and instance.items.filter(turn=2).exists()
    excluded = set(instance.items.filter(turn=2).values_list("id", flat=True)) | set(
        ChecklistItem.objects.filter(instance__benchmark=demo_study, group=group).values_list("id", flat=True)
    )
    recomputed = dialogues_select(benchmark=demo_study, judge=judge, excluded_items=excluded)
    assert recomputed != dialogues_select(benchmark=demo_study, judge=judge)  # the exclusion changes something
    Verdict.objects.filter(item_id__in=excluded).delete()
    rollups_rebuild_for_attempts(list(Attempt.objects.filter(run__benchmark=demo_study).values_list("id", flat=True)))
    rebuilt = dialogues_select(benchmark=demo_study, judge=judge)
    assert recomputed == rebuilt
    assert all(2 not in {t.turn for t in d.turns} for d in rebuilt if d.instance == instance.external_id)
