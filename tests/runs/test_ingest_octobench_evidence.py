"""octobench-scores: a check's optional evidence (or message_index) becomes the verdict's evidence, validated."""

import json
from pathlib import Path

import pytest
from django.urls import reverse

from runs.ingest import IngestFailed, Options, Source, ingest
from runs.models import Trajectory, Verdict

pytestmark = pytest.mark.django_db
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "octobench"


@pytest.fixture
def instances():
    ingest("octobench-instances", [Source.of(FIXTURES / "instances.jsonl")], Options())


def scores_with(tmp_path, **fields_by_check) -> Path:
    """The fixture scores file with extra fields on some checks of oct-alpha, written one key per line."""
    document = json.loads((FIXTURES / "scores.json").read_text())
    for result in document["results"]:
        if result["instance_id"] != "oct-alpha":
            continue
        for group in result["eval_result"].values():
            for check in group["checks"]:
                check.update(fields_by_check.get(check["check_id"], {}))
    path = tmp_path / "scores.json"
    path.write_text(json.dumps(document, ensure_ascii=False, indent=1))
    return path


def load(path):
    return ingest("octobench-scores", [Source.of(path)], Options(model="model-x", judge="judge-a"))


def evidence_of(check_id: str):
    return Verdict.objects.get(item__key=check_id, attempt__instance__external_id="oct-alpha").evidence


def test_it_stores_both_evidence_shapes_and_message_index_in_one_shape(instances, tmp_path):
    load(
        scores_with(
            tmp_path,
            **{
                "SP-1": {"evidence": 7},
                "SP-2": {"evidence": {"thread": 1, "message": 3}},
                "UQ-1": {"message_index": 12},
                "MD-1": {"evidence": {"message": 0}},
            },
        )
    )

    assert evidence_of("SP-1") == {"thread": 0, "message": 7}
    assert evidence_of("SP-2") == {"thread": 1, "message": 3}
    assert evidence_of("UQ-1") == {"thread": 0, "message": 12}
    assert evidence_of("MD-1") == {"thread": 0, "message": 0}
    assert evidence_of("T-1") is None


def test_it_accepts_an_index_beyond_the_trajectory_since_it_may_come_later(instances, tmp_path):
    load(scores_with(tmp_path, **{"SP-1": {"evidence": 10_000}}))
    assert not Trajectory.objects.exists() and evidence_of("SP-1") == {"thread": 0, "message": 10_000}


@pytest.mark.parametrize(
    "fields, reason",
    [
        (
            {"evidence": "turn 8"},
            '\'evidence\' should be a message index (an integer >= 0) or {"thread": n, "message": i}, found "turn 8"',
        ),
        ({"evidence": -1}, "'evidence' should be a message index"),
        ({"evidence": True}, "'evidence' should be a message index"),
        ({"evidence": {"thread": 0}}, "'evidence' should be a message index"),
        ({"evidence": {"message": 2, "thread": "main"}}, "'evidence' should be a message index"),
        ({"evidence": {"message": 2.5}}, "'evidence' should be a message index"),
        ({"message_index": "4"}, "'message_index' should be a message index (an integer >= 0), found \"4\""),
        ({"message_index": {"message": 4}}, "'message_index' should be a message index (an integer >= 0)"),
        ({"evidence": 1, "message_index": 1}, "give either 'evidence' or 'message_index', not both"),
    ],
)
def test_it_rejects_evidence_of_the_wrong_type_with_file_and_line(instances, tmp_path, fields, reason):
    path = scores_with(tmp_path, **{"SP-2": fields})
    start = (
        path.read_text().splitlines().index('   "instance_id": "oct-alpha",')
    )  # the result object opens a line above

    with pytest.raises(IngestFailed) as info:
        load(path)

    [problem] = info.value.problems
    assert str(problem).startswith(f"scores.json:{start}: check 'SP-2': {reason}")
    assert not Verdict.objects.exists()


def test_it_links_the_ingested_evidence_to_the_message_on_the_attempt_page(instances, tmp_path, reviewer_client):
    ingest("octobench-trajectories", [Source.of(FIXTURES / "trajectory_merged.jsonl")], Options(model="model-x"))
    load(scores_with(tmp_path, **{"SP-1": {"evidence": 2}}))
    verdict = Verdict.objects.get(item__key="SP-1", attempt__instance__external_id="oct-alpha")

    body = reviewer_client.get(reverse("runs:attempt", args=[verdict.attempt_id])).content.decode()

    assert "?thread=0&amp;at=2#m-0-2" in body and 'id="m-0-2"' in body
