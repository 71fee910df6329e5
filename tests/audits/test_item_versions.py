"""Rewriting an audited item as a new version linked to the old: the service, the pages, the API,
the "superseded" exclusion policy, re-imports that keep both versions, and verdicts on the new key."""

import json
import threading
from pathlib import Path

import pytest
from django.core.exceptions import PermissionDenied
from django.db import connection

from audits import services
from audits.models import AuditUnit, ItemRevision
from runs.ingest import IngestFailed, Options, Source, ingest
from runs.ingest.base import content_hash
from runs.models import Benchmark, ChecklistItem, Verdict

from .conftest import client_for

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
NEW_TEXT = "Check the output has no line longer than 80 characters"


def _unit_of(campaign, item) -> AuditUnit:
    return campaign.units.get(item=item)


def _rewrite(item, lead, **kw):
    return services.item_rewrite(item=item, lead=lead, **{"description": NEW_TEXT, "reason": "ambiguous", **kw})


# the service ---------------------------------------------------------------------------
def test_it_rewrites_an_item_as_v2_linked_to_v1(bench, campaign, lead):
    old = bench["items"][(1, "x")]
    unit = _unit_of(campaign, old)

    new = _rewrite(old, lead, unit=unit)

    assert (new.key, new.version, new.supersedes_id, new.instance_id) == ("x@v2", 2, old.id, old.instance_id)
    assert (new.position, new.category, new.check_type, new.conditional) == (
        old.position,
        old.category,
        old.check_type,
        old.conditional,
    )
    assert new.description == NEW_TEXT
    old.refresh_from_db()
    assert old.description == "Check the output is nice" and old.superseded_by == new and old.verdicts.count() == 2
    provenance = new.details["audit_rewrite"]
    assert (provenance["rewrites"], provenance["by"], provenance["reason"], provenance["unit"]) == (
        "x",
        "lead",
        "ambiguous",
        unit.pk,
    )
    revision = ItemRevision.objects.get()
    assert (revision.old_item, revision.new_item, revision.lead, revision.unit) == (old, new, lead, unit)
    assert (revision.old_description, revision.new_description) == ("Check the output is nice", NEW_TEXT)


def test_it_hashes_the_new_version_as_a_native_import_of_its_record(bench, lead):
    new = _rewrite(bench["items"][(1, "x")], lead, category="SP", check_type="format")
    record = {
        "key": "x@v2",
        "category": "SP",
        "check_type": "format",
        "group": "",
        "description": NEW_TEXT,
        "conditional": False,
        "turn": None,
        "privilege": None,
        "details": new.details,
    }

    assert new.content_hash == content_hash([new.position, record])
    assert (new.category, new.category_original, new.check_type) == ("System Prompt", "SP", "format")


def test_it_refuses_to_rewrite_an_item_that_has_a_newer_version(bench, lead):
    old = bench["items"][(1, "x")]
    v2 = _rewrite(old, lead)

    with pytest.raises(services.ItemAlreadyRewritten, match=r"already rewritten as v2 \('x@v2'\).*newest version"):
        _rewrite(old, lead, description="something else")
    v3 = _rewrite(v2, lead, description="Third wording")

    assert (v3.key, v3.version, v3.supersedes_id) == ("x@v3", 3, v2.id)
    assert ChecklistItem.objects.filter(instance=old.instance).count() == 5


def test_it_refuses_a_non_lead_and_a_rewrite_that_changes_nothing(bench, lead, annotator_a):
    item = bench["items"][(1, "x")]

    with pytest.raises(PermissionDenied):
        _rewrite(item, annotator_a)
    with pytest.raises(services.AuditError, match="changes nothing"):
        services.item_rewrite(item=item, lead=lead, description="  Check the output is nice ")
    with pytest.raises(services.AuditError, match="needs a description"):
        services.item_rewrite(item=item, lead=lead, description=" \n ")
    assert not ChecklistItem.objects.filter(supersedes__isnull=False).exists() and not ItemRevision.objects.exists()


def test_it_refuses_a_unit_that_is_not_about_the_item(bench, campaign, lead):
    other_unit = _unit_of(campaign, bench["items"][(2, "y")])

    with pytest.raises(services.AuditError, match="not about that item"):
        _rewrite(bench["items"][(1, "x")], lead, unit=other_unit)


def test_it_picks_a_free_key_and_keeps_it_within_the_column(bench, lead):
    instance = bench["items"][(1, "x")].instance
    ChecklistItem.objects.create(instance=instance, key="x@v2", position=9, content_hash="h")  # an imported key
    long_item = ChecklistItem.objects.create(
        instance=instance, key="k" * 300, position=10, description="d", content_hash="h"
    )

    assert _rewrite(bench["items"][(1, "x")], lead).key == "x@v2-2"
    long_new = _rewrite(long_item, lead)
    assert long_new.key == "k" * 297 + "@v2" and len(long_new.key) == 300


def test_it_keeps_nul_characters_out_of_the_stored_text(bench, lead):
    new = _rewrite(bench["items"][(1, "x")], lead, description="a\x00b", reason="r\x00")
    assert new.description == "a\ufffdb" and new.details["audit_rewrite"]["reason"] == "r\ufffd"


@pytest.mark.django_db(transaction=True)
def test_it_creates_one_version_when_two_rewrites_race(bench, lead):
    if connection.vendor == "sqlite" and "memorydb" in str(connection.settings_dict["NAME"]):
        pytest.skip(
            "in-memory SQLite (shared cache) answers 'table is locked' to concurrent writers; runs on PostgreSQL"
        )
    item = bench["items"][(1, "x")]
    barrier, outcomes = threading.Barrier(2), []

    def rewrite(text):
        try:
            barrier.wait()
            outcomes.append(_rewrite(item, lead, description=text).key)
        except services.AuditError as exc:
            outcomes.append(type(exc).__name__)
        finally:
            connection.close()

    threads = [threading.Thread(target=rewrite, args=(t,)) for t in ("first wording", "second wording")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)

    assert sorted(outcomes) == ["ItemAlreadyRewritten", "x@v2"]
    assert ChecklistItem.objects.filter(supersedes=item).count() == 1 and ItemRevision.objects.count() == 1


# pages ---------------------------------------------------------------------------------
def test_it_offers_the_rewrite_form_to_a_lead_on_the_unit_and_adjudication_pages(bench, campaign, lead):
    unit = _unit_of(campaign, bench["items"][(1, "x")])
    client = client_for(lead)

    for url in (f"/audits/units/{unit.pk}/", f"/audits/units/{unit.pk}/adjudicate/"):
        html = client.get(url).content.decode()
        assert "Rewrite this item" in html and f'action="/audits/units/{unit.pk}/rewrite/"' in html
        assert ">\nCheck the output is nice</textarea>" in html and "version 1" in html


def test_it_rewrites_from_the_unit_page_and_shows_the_version_chain(bench, campaign, lead):
    old = bench["items"][(1, "x")]
    unit = _unit_of(campaign, old)
    client = client_for(lead)

    response = client.post(
        f"/audits/units/{unit.pk}/rewrite/",
        {
            "description": "<b>No</b> line over 80 characters",
            "check_type": "format",
            "category": "User Query",
            "reason": "ambiguous: 'nice'",
            "back": "unit",
        },
    )

    assert response.status_code == 302 and response["Location"] == f"/audits/units/{unit.pk}/"
    new = ChecklistItem.objects.get(supersedes=old)
    assert (new.key, new.check_type, new.details["audit_rewrite"]["unit"]) == ("x@v2", "format", unit.pk)
    html = client.get(response["Location"]).content.decode()
    assert "Versions of this item" in html and "superseded by v2" in html and "x@v2" in html
    assert "&lt;b&gt;No&lt;/b&gt; line over 80 characters" in html and "<b>No</b>" not in html
    assert "reason: ambiguous: &#x27;nice&#x27;" in html
    assert "Rewrite this item</button>" not in html  # only the newest version can be rewritten


def test_it_keeps_the_typed_text_when_a_second_submission_is_refused(bench, campaign, lead):
    unit = _unit_of(campaign, bench["items"][(1, "x")])
    client = client_for(lead)
    form = {"description": NEW_TEXT, "check_type": "compliance", "category": "User Query", "reason": "", "back": "unit"}

    first = client.post(f"/audits/units/{unit.pk}/rewrite/", form)
    again = client.post(f"/audits/units/{unit.pk}/rewrite/", {**form, "description": "a later wording"})

    assert first.status_code == 302 and again.status_code == 200
    html = again.content.decode()
    assert "already rewritten as v2" in html and ">\na later wording</textarea>" in html
    assert ChecklistItem.objects.filter(key__startswith="x@v").count() == 1


def test_it_returns_to_the_adjudication_of_a_disputed_unit(bench, campaign, lead):
    unit = _unit_of(campaign, bench["items"][(1, "x")])
    AuditUnit.objects.filter(pk=unit.pk).update(state="disputed")

    response = client_for(lead).post(
        f"/audits/units/{unit.pk}/rewrite/",
        {"description": NEW_TEXT, "check_type": "compliance", "category": "User Query", "back": "adjudicate"},
    )

    assert response.status_code == 302 and response["Location"] == f"/audits/units/{unit.pk}/adjudicate/"


def test_it_refuses_the_rewrite_page_to_annotators_and_reviewers(bench, campaign, annotator_a, django_user_model):
    from django.contrib.auth.models import Group

    unit = _unit_of(campaign, bench["items"][(1, "x")])
    reviewer = django_user_model.objects.create_user("reviewer", password="pw-reviewer-1")
    reviewer.groups.add(Group.objects.get_or_create(name="reviewer")[0])
    form = {"description": NEW_TEXT, "check_type": "", "category": ""}

    assert client_for(annotator_a).post(f"/audits/units/{unit.pk}/rewrite/", form).status_code in (403, 404)
    assert client_for(reviewer).post(f"/audits/units/{unit.pk}/rewrite/", form).status_code == 403
    assert "Rewrite this item" not in client_for(reviewer).get(f"/audits/units/{unit.pk}/").content.decode()
    assert not ChecklistItem.objects.filter(supersedes__isnull=False).exists()


def test_it_marks_both_versions_on_the_instance_page(bench, lead):
    old = bench["items"][(1, "x")]
    new = _rewrite(old, lead, description="<script>alert(1)</script> wording")

    html = client_for(lead).get(f"/instances/{old.instance_id}/").content.decode()

    assert f'<a href="#item-{old.id}">v1</a>' in html and "v2, rewrites" in html
    assert f'<a href="#item-{new.id}">v2</a>' in html and "v1, superseded by" in html
    assert "v1 text" in html and "Check the output is nice" in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>alert(1)" not in html


def test_it_shows_the_version_on_the_labelling_screen(bench, campaign, annotator_a):
    html = client_for(annotator_a).post(f"/audits/{campaign.pk}/label/", follow=True).content.decode()
    assert "version 1" in html


def test_it_samples_only_the_newest_version_in_a_new_campaign(bench, lead):
    _rewrite(bench["items"][(1, "x")], lead)
    c = services.campaign_start(
        services.campaign_create(
            name="round 2",
            subject="checklist_items",
            benchmarks=[bench["benchmark"]],
            strata=[],
            allocation="proportional",
            size=100,
            seed=1,
            user=lead,
        )
    )

    keys = set(c.units.values_list("key", flat=True))
    assert "octo-test/task-1/x@v2" in keys and "octo-test/task-1/x" not in keys and len(keys) == 9


# API -----------------------------------------------------------------------------------
def test_it_rewrites_by_api_and_refuses_the_second_submission(bench, campaign, lead):
    old = bench["items"][(1, "x")]
    unit = _unit_of(campaign, old)
    api = client_for(lead)
    body = {"description": NEW_TEXT, "reason": "ambiguous", "unit": unit.pk}

    first = api.post(f"/api/audits/items/{old.pk}/rewrite/", body, content_type="application/json")
    second = api.post(f"/api/audits/items/{old.pk}/rewrite/", body, content_type="application/json")

    new = ChecklistItem.objects.get(supersedes=old)
    assert first.status_code == 201
    assert first.json() == {
        "id": new.id,
        "key": "x@v2",
        "version": 2,
        "supersedes": old.id,
        "supersedes_key": "x",
        "instance": "task-1",
        "description": NEW_TEXT,
        "category": "User Query",
        "check_type": "compliance",
    }
    assert second.status_code == 409 and "already rewritten" in second.json()["detail"]
    assert ItemRevision.objects.get().unit == unit


def test_it_refuses_the_api_rewrite_to_non_leads_and_bad_input(bench, lead, annotator_a, client):
    item = bench["items"][(1, "x")]
    url = f"/api/audits/items/{item.pk}/rewrite/"

    assert client.post(url, {"description": NEW_TEXT}, content_type="application/json").status_code in (401, 403)
    assert (
        client_for(annotator_a).post(url, {"description": NEW_TEXT}, content_type="application/json").status_code == 403
    )
    api = client_for(lead)
    assert api.post(url, {}, content_type="application/json").status_code == 400
    assert (
        api.post(url, {"description": "Check the output is nice"}, content_type="application/json").status_code == 400
    )
    assert (
        api.post(url, {"description": NEW_TEXT, "unit": 2**31 - 1}, content_type="application/json").status_code == 404
    )
    assert (
        api.post(
            "/api/audits/items/999999/rewrite/", {"description": NEW_TEXT}, content_type="application/json"
        ).status_code
        == 404
    )
    assert not ChecklistItem.objects.filter(supersedes__isnull=False).exists()


def test_the_assignment_api_tells_the_item_version(bench, campaign, annotator_a):
    body = client_for(annotator_a).post(f"/api/audits/campaigns/{campaign.pk}/next/").json()
    assert [i["version"] for i in body["items"]] == [1]


# leaderboards ----------------------------------------------------------------------------
def test_the_superseded_policy_leaves_old_versions_out_of_the_leaderboard_api(bench, lead):
    for n in (1, 2, 3):
        _rewrite(bench["items"][(n, "x")], lead)
    api = client_for(lead)

    before = api.get("/api/leaderboards/octo-test/").json()
    after = api.get("/api/leaderboards/octo-test/?exclude=superseded").json()
    excluded = api.get("/api/audits/excluded-items/octo-test/?exclude=superseded").json()

    assert [r["model"] for r in before["rows"]] == ["beta", "alpha"] and before["excluded_items"] == 0
    assert [r["model"] for r in after["rows"]] == ["alpha", "beta"] and after["excluded_items"] == 3
    assert after["rows"][0]["isr"] == 100.0
    assert excluded["items"] == sorted(bench["items"][(n, "x")].id for n in (1, 2, 3))


def test_a_rewrite_bumps_the_generation_so_a_cached_leaderboard_follows(
    bench, lead, django_capture_on_commit_callbacks
):
    api = client_for(lead)
    url = "/api/leaderboards/octo-test/?exclude=superseded"
    with django_capture_on_commit_callbacks(execute=True):
        before = api.get(url).json()
    generation = Benchmark.objects.get(pk=bench["benchmark"].pk).data_generation

    for n in (1, 2, 3):
        _rewrite(bench["items"][(n, "x")], lead)
    with django_capture_on_commit_callbacks(execute=True):
        after = api.get(url).json()

    assert Benchmark.objects.get(pk=bench["benchmark"].pk).data_generation == generation + 3
    assert [r["model"] for r in before["rows"]] == ["beta", "alpha"]
    assert [r["model"] for r in after["rows"]] == ["alpha", "beta"]


def test_the_superseded_policy_excludes_nothing_without_rewrites(bench, lead):
    after = client_for(lead).get("/api/leaderboards/octo-test/?exclude=superseded").json()
    assert after["excluded_items"] == 0 and [r["model"] for r in after["rows"]] == ["beta", "alpha"]


# re-imports ----------------------------------------------------------------------------
REIMPORTS = [
    ("native", "native/study.jsonl", {}),
    ("octobench-instances", "octobench/instances.jsonl", {}),
    ("evolif-dialogs", "evolif/dialog_1.jsonl", {}),
    ("manyih-data", "manyih/coding_small.json", {}),
    ("guidebench-tasks", "guidebench/chat_tasks.json", {}),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("format_name", "path", "options"), REIMPORTS, ids=[r[0] for r in REIMPORTS])
def test_a_re_import_of_the_same_file_keeps_both_versions_and_the_link(lead, format_name, path, options):
    source = Source.of(FIXTURES / path)
    ingest(format_name, [source], Options(**options))
    old = ChecklistItem.objects.order_by("instance_id", "position", "id").first()
    new = _rewrite(old, lead)
    count = ChecklistItem.objects.count()

    ingest(format_name, [source], Options(**options))

    new.refresh_from_db()
    assert ChecklistItem.objects.count() == count
    assert (new.supersedes_id, new.description, new.version) == (old.id, NEW_TEXT, 2)
    assert ChecklistItem.objects.get(pk=old.pk).superseded_by == new


def _native(tmp_path, records, name="defs.jsonl") -> Source:
    path = tmp_path / name
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n", encoding="utf-8")
    return Source.of(path)


@pytest.mark.django_db
def test_a_corrected_file_without_the_old_key_keeps_both_versions_and_still_drops_other_items(tmp_path, lead):
    bench = {"type": "benchmark", "slug": "acme", "kind": "checklist"}
    items = [{"key": k, "description": f"item {k}"} for k in ("a", "b", "c")]
    ingest("native", [_native(tmp_path, [bench, {"type": "instance", "id": "t1", "items": items}])], Options())
    old = ChecklistItem.objects.get(key="a")
    new = _rewrite(old, lead)

    report = ingest(
        "native",
        [_native(tmp_path, [bench, {"type": "instance", "id": "t1", "items": items[1:2]}], "corrected.jsonl")],
        Options(),
    )

    assert set(ChecklistItem.objects.values_list("key", flat=True)) == {"a", "a@v2", "b"}
    assert ChecklistItem.objects.get(key="a@v2").supersedes_id == old.id == new.supersedes_id
    assert report.counts["checklist items"]["removed"] == 1  # "c": the drop logic still removes what the file dropped


@pytest.mark.django_db
def test_a_file_may_not_overwrite_a_rewrite_under_its_key(tmp_path, lead):
    bench = {"type": "benchmark", "slug": "acme", "kind": "checklist"}
    items = [{"key": "a", "description": "item a"}]
    ingest("native", [_native(tmp_path, [bench, {"type": "instance", "id": "t1", "items": items}])], Options())
    new = _rewrite(ChecklistItem.objects.get(key="a"), lead)
    clash = items + [{"key": new.key, "description": "the file's own idea of a@v2"}]

    with pytest.raises(IngestFailed) as failed:
        ingest(
            "native",
            [_native(tmp_path, [bench, {"type": "instance", "id": "t1", "items": clash}], "clash.jsonl")],
            Options(),
        )

    assert [p.reason for p in failed.value.problems] == [
        "is an audit's rewrite of another item: a file may not redefine it (give the file's item another key)"
    ]
    assert "a@v2" in str(failed.value.problems[0])
    new.refresh_from_db()
    assert new.description != "the file's own idea of a@v2" and new.supersedes is not None


# verdicts on the new version ------------------------------------------------------------
def test_native_verdicts_address_the_new_version_by_its_key(bench, lead, tmp_path):
    for n in (1, 2, 3):
        _rewrite(bench["items"][(n, "x")], lead)
    records = [
        {
            "type": "verdict",
            "run": f"{model}-r1",
            "instance": f"task-{n}",
            "item": "x@v2",
            "judge": "judge-2",
            "result": "pass",
            "reasoning": "re-run on the rewritten item",
        }
        for model in ("alpha", "beta")
        for n in (1, 2, 3)
    ]

    report = ingest("native", [_native(tmp_path, records, "rerun.jsonl")], Options(benchmark="octo-test"))

    verdicts = Verdict.objects.filter(item__key="x@v2", judge__name="judge-2")
    assert verdicts.count() == 6 and report.counts["verdicts"]["created"] == 6
    assert set(verdicts.values_list("item__version", flat=True)) == {2}
    assert Verdict.objects.filter(item__key="x").count() == 6  # the old version's verdicts stay


def test_a_verdict_on_the_new_key_is_taken_after_a_re_import_of_the_instance_without_it(lead, tmp_path):
    bench = {"type": "benchmark", "slug": "acme", "kind": "checklist"}
    instance = {"type": "instance", "id": "t1", "items": [{"key": "a", "description": "item a"}]}
    ingest("native", [_native(tmp_path, [bench, instance, {"type": "run", "label": "r1", "model": "m"}])], Options())
    _rewrite(ChecklistItem.objects.get(key="a"), lead)
    verdict = {"type": "verdict", "run": "r1", "instance": "t1", "item": "a@v2", "judge": "j", "result": "pass"}
    unknown = {"type": "verdict", "run": "r1", "instance": "t1", "item": "a@v3", "judge": "j", "result": "pass"}

    # the file's instance record does not list the rewrite, which the re-import keeps: its key stays addressable
    ingest("native", [_native(tmp_path, [bench, instance, verdict], "both.jsonl")], Options())
    with pytest.raises(IngestFailed) as failed:
        ingest("native", [_native(tmp_path, [bench, instance, unknown], "wrong.jsonl")], Options())

    assert "unknown item 'a@v3' of instance 't1'" in "\n".join(str(p) for p in failed.value.problems)
    assert Verdict.objects.get().item.key == "a@v2"
