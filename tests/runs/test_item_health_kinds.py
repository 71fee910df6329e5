"""Item health on the conflict and choice kinds: a conflict's resolution item passes when the attempt followed the
system prompt and its judges split when they name different sides; a choice benchmark's rows are its tasks, passed
when the answer matches the ground truth. Every figure equals a recomputation here from what the study says
(statsmodels' Wilson interval, scipy's Pearson r), in the page, its export and the API alike."""

import json

import numpy as np
import pytest
from django.contrib.auth.models import Group
from django.test import Client
from django.urls import reverse
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from audits.selectors import candidates
from runs.ingest import Options, Source, ingest
from runs.models import AgentModel, Attempt, Benchmark, Instance, Run

pytestmark = pytest.mark.django_db

CONFLICT = "octo-conflict-health"
SP_CONFLICTS = [f"c{n:02d}" for n in range(12)]
MD_CONFLICTS = ["m0", "m1"]
MODELS = [f"model-{m}" for m in range(5)]
#: conflicts judge j2 reads too; on c00 and c01 it always says "neither"
TWICE = SP_CONFLICTS[:6]


def _followed() -> dict[tuple[str, str], str]:
    """(model, conflict) -> the side j1 says was followed: B (the system prompt) with the model's chance; c11 by no
    model (a floor), c10 by every model (a ceiling)."""
    rng = np.random.default_rng(34)
    out = {}
    for m, model in enumerate(MODELS):
        for key in SP_CONFLICTS + MD_CONFLICTS:
            draw = rng.random()
            out[(model, key)] = "B" if draw < 0.2 + 0.15 * m else ("neither" if draw > 0.95 else "A")
        out[(model, "c11")], out[(model, "c10")] = "A", "B"
    return out


FOLLOWED = _followed()


def _j2(model: str, key: str) -> str:
    return "neither" if key in ("c00", "c01") else FOLLOWED[(model, key)]


@pytest.fixture
def conflict_study(tmp_path):
    records = [{"type": "benchmark", "slug": CONFLICT, "name": "Octo conflict health", "kind": "conflict"}]
    for key in SP_CONFLICTS + MD_CONFLICTS:
        md = key in MD_CONFLICTS
        conflict = {
            "type": "UQ vs MD" if md else "UQ vs SP",
            "scenario": "indentation" if md else "emoji",
            "a": {"source": "UQ", "instruction": f"User wants {key}."},
            "b": {"source": "AGENTS.md" if md else "SP", "instruction": f"Other side of {key}."},
        }
        records.append(
            {
                "type": "instance",
                "id": key,
                "spec": {"conflict": conflict},
                "items": [{"key": "resolution", "check_type": "conflict"}, {"key": "tone", "check_type": "style"}],
            }
        )
    for m, model in enumerate(MODELS):
        records.append({"type": "run", "label": f"{model}-r1", "model": model})
        for key in SP_CONFLICTS + MD_CONFLICTS:
            records.append({"type": "attempt", "run": f"{model}-r1", "instance": key, "response": "reply"})
            # an item beside the resolution, judged pass or fail as on a checklist: models 0, 2, 4 pass it
            records.append(
                {
                    "type": "verdict",
                    "run": f"{model}-r1",
                    "instance": key,
                    "item": "tone",
                    "judge": "j1",
                    "result": "fail" if m % 2 else "pass",
                }
            )
            for judge in ("j1", "j2") if key in TWICE else ("j1",):
                side = FOLLOWED[(model, key)] if judge == "j1" else _j2(model, key)
                records.append(
                    {
                        "type": "verdict",
                        "run": f"{model}-r1",
                        "instance": key,
                        "item": "resolution",
                        "judge": judge,
                        "result": "na",
                        "evidence": {"followed": side},
                    }
                )
    path = tmp_path / "study.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    ingest("native", [Source.of(path)], Options())
    return Benchmark.objects.get(slug=CONFLICT)


def _client(django_user_model, name, group):
    user = django_user_model.objects.create_user(name, password="pw-1-x")
    user.groups.add(Group.objects.get_or_create(name=group)[0])
    client = Client()
    client.force_login(user)
    return client


def _wilson(k, n):
    low, high = proportion_confint(k, n, alpha=0.05, method="wilson")
    return 100 * k / n, 100 * low, 100 * high


def test_a_conflicts_health_counts_following_the_system_prompt_and_judges_naming_different_sides(
    conflict_study, django_user_model
):
    client = _client(django_user_model, "rev", "reviewer")
    api = client.get(reverse("api:item-health", args=[CONFLICT])).json()
    assert api["unit"] == "item" and api["models"] == MODELS and api["irt_fitted"] is False
    items = {i["instance"]: i for i in api["items"] if i["key"] == "resolution"}
    assert sorted(items) == sorted(SP_CONFLICTS + MD_CONFLICTS)
    tones = [i for i in api["items"] if i["key"] == "tone"]
    assert len(tones) == len(items) and {(t["passes"], t["verdicts"], t["check_type"]) for t in tones} == {
        (3, 5, "style")
    }
    for key in SP_CONFLICTS:
        answers = [FOLLOWED[(m, key)] for m in MODELS] + ([_j2(m, key) for m in MODELS] if key in TWICE else [])
        k, n = answers.count("B"), len(answers)
        rate, low, high = _wilson(k, n)
        item = items[key]
        assert (item["passes"], item["verdicts"], item["check_type"]) == (k, n, "UQ vs SP"), key
        assert item["pass_rate"] == pytest.approx(rate / 100, abs=1e-12)
        assert item["pass_low"] == pytest.approx(low / 100, abs=1e-12)
        assert item["pass_high"] == pytest.approx(high / 100, abs=1e-12)
        if key in TWICE:
            split = sum(FOLLOWED[(m, key)] != _j2(m, key) for m in MODELS)
            assert (item["split_attempts"], item["judged_twice"]) == (split, len(MODELS)), key
        else:
            assert item["split_rate"] is None and item["judged_twice"] == 0, key
    # a judge naming "neither" where the other named A is a split, though neither followed the system prompt
    assert items["c00"]["split_rate"] == 1.0 and "judge-split" in items["c00"]["flags"]
    assert "floor" in items["c11"]["flags"] and "ceiling" in items["c10"]["flags"]
    for key in MD_CONFLICTS:  # no system-prompt side: no pass rate, no flag from one
        assert items[key]["pass_rate"] is None and items[key]["models"] == 0 and items[key]["flags"] == []
    # the rest correlation: across models, the model's SP share on the conflict against its SP share elsewhere
    own = np.array([[FOLLOWED[(m, k)] == "B" for k in SP_CONFLICTS] for m in MODELS], dtype=float)
    twice = np.array([[_j2(m, k) == "B" for k in TWICE] for m in MODELS], dtype=float)
    passes = own.copy()
    passes[:, : len(TWICE)] += twice
    judged = np.ones_like(own)
    judged[:, : len(TWICE)] += 1
    # every other item with pass or fail verdicts counts in the rest: the tone items too (one verdict each)
    tone_passes = np.array([(m % 2 == 0) * len(SP_CONFLICTS + MD_CONFLICTS) for m in range(len(MODELS))])
    tone_judged = len(SP_CONFLICTS + MD_CONFLICTS)
    j = SP_CONFLICTS.index("c05")
    rest = (passes.sum(axis=1) - passes[:, j] + tone_passes) / (judged.sum(axis=1) - judged[:, j] + tone_judged)
    assert items["c05"]["rest_correlation"] == pytest.approx(stats.pearsonr(passes[:, j] / judged[:, j], rest)[0])


def test_a_conflict_page_links_its_item_health_and_leaves_out_flagged_resolutions(conflict_study, django_user_model):
    lead = _client(django_user_model, "lead", "lead")
    page = lead.get(reverse("runs:conflict-item-health", args=[CONFLICT])).content.decode()
    assert "Conflict types" in page and "followed the system prompt" in page and "Any other item" in page
    assert "subject=checklist_items" in page and "strata=health" in page  # "Audit these": conflicts are items
    # and the item audit it proposes draws c11 from the floor stratum, the unflagged conflicts from the control
    strata = {
        tuple(c.key.split("/")[1:]): c.facets["health"] for c in candidates("checklist_items", [conflict_study.id])
    }
    assert strata[("c11", "resolution")] == "floor" and strata[("c10", "resolution")] == "ceiling"
    assert strata[("m0", "resolution")] == "unflagged" and strata[("c11", "tone")] == "unflagged"
    metrics_page = lead.get(reverse("runs:conflict-metrics", args=[CONFLICT])).content.decode()
    assert reverse("runs:conflict-item-health", args=[CONFLICT]) in metrics_page
    api = lead.get(reverse("api:conflict-metrics") + f"?benchmark={CONFLICT}&judge=j1&health=floor").json()
    before = lead.get(reverse("api:conflict-metrics") + f"?benchmark={CONFLICT}&judge=j1").json()
    # leaving out c11, which no model followed the system prompt on, raises every model's SP rate
    rates = {r["label"]: r for r in api["sp_rates"]}
    for row in before["sp_rates"]:
        assert rates[row["label"]]["sp_rate"] > row["sp_rate"]


def _choice_study(models=25, tasks=30):
    """A choice benchmark whose answers come from a seeded 2PL: task t's difficulty rises with t, model m's ability
    with m; task 0 answered right by every model, task 29 by none."""
    rng = np.random.default_rng(7)
    bench = Benchmark.objects.create(slug="guide", name="Guide", kind="choice")
    instances = [
        Instance.objects.create(
            benchmark=bench,
            external_id=f"price-{t:03d}",
            primary_category="price" if t % 2 else "math",
            content_hash=str(t),
            spec={"Instruction": f"task {t}", "Context": f"context of task {t}", "Groundtruth": {"ReferenceAnswer": 1}},
        )
        for t in range(tasks)
    ]
    correct = np.zeros((models, tasks), dtype=bool)
    for m in range(models):
        run = Run.objects.create(benchmark=bench, model=AgentModel.objects.create(name=f"m{m:02d}"), label=f"r{m:02d}")
        ability = -2 + 4 * m / (models - 1)
        for t, instance in enumerate(instances):
            right = rng.random() < 1 / (1 + np.exp(-(ability - (-2 + 4 * t / (tasks - 1)))))
            right = True if t == 0 else False if t == tasks - 1 else right
            correct[m, t] = right
            outcome = {"answer": 1 if right else 2, "ground_truth": 1, "unanswered": False, "correct": bool(right)}
            Attempt.objects.create(run=run, instance=instance, outcome=outcome)
    return bench, correct


def test_a_choice_benchmarks_rows_are_its_tasks_with_the_2pl_fitted_over_enough_models(django_user_model):
    bench, correct = _choice_study()
    client = _client(django_user_model, "rev", "reviewer")
    api = client.get(reverse("api:item-health", args=["guide"])).json()
    assert api["unit"] == "task" and api["instances"] == [] and api["irt_fitted"] is True
    assert set(api["flag_counts"]) == {"floor", "ceiling", "low-discrimination", "negative-discrimination"}
    tasks = api["items"]
    assert [t["instance"] for t in tasks] == [f"price-{t:03d}" for t in range(30)]
    totals = correct.sum(axis=1)
    for t, task in enumerate(tasks):
        k = int(correct[:, t].sum())
        rate, low, high = _wilson(k, 25)
        assert (task["passes"], task["verdicts"], task["models"]) == (k, 25, 25)
        assert task["pass_low"] == pytest.approx(low / 100, abs=1e-12)
        assert task["pass_high"] == pytest.approx(high / 100, abs=1e-12)
        rest = (totals - correct[:, t]) / 29
        if 0 < k < 25:
            assert task["rest_correlation"] == pytest.approx(stats.pearsonr(correct[:, t], rest)[0]), t
        assert task["judged_twice"] == 0 and task["split_rate"] is None
    assert "ceiling" in tasks[0]["flags"] and "floor" in tasks[29]["flags"]
    # the fit orders the tasks by difficulty as the simulation made them
    fitted = [(t, task["difficulty"]) for t, task in enumerate(tasks) if task["difficulty"] is not None]
    assert stats.spearmanr([t for t, _ in fitted], [d for _, d in fitted])[0] > 0.8

    page = client.get(reverse("runs:choice-item-health", args=["guide"])).content.decode()
    assert "Each row is a task" in page and "<th>Task</th>" in page
    assert "Judge split" not in page and "<th>Audit</th>" not in page and "Kinds of check" not in page
    assert 'title="context of task 3"' in page
    assert "flagged by annotators" not in page and "Audit these" not in page
    assert (
        reverse("runs:choice-item-health", args=["guide"])
        in client.get(reverse("runs:choice-metrics", args=["guide"])).content.decode()
    )
    exported = json.loads(client.get(reverse("runs:choice-item-health", args=["guide"]) + "?export=json").content)
    rows = next(t for t in exported["tables"] if t["name"] == "items")["rows"]
    assert [r["pass_rate"] for r in rows] == [pytest.approx(100 * t["pass_rate"]) for t in tasks]
    assert client.get(reverse("api:item-health", args=["guide"]) + "?flag=annotators").status_code == 400
