"""manage.py portal_export / portal_import (runs.portability): what an archive carries, and what an import refuses.

The demo study's trip SQLite -> PostgreSQL -> SQLite, compared page by page, is test_portal_archive_roundtrip.py."""

import hashlib
import json
import zipfile
from pathlib import Path

import pytest
from django.apps import apps
from django.contrib.auth.models import Group
from django.core.management import CommandError, call_command
from rest_framework.authtoken.models import Token

from runs import portability
from runs.models import AgentModel, Attempt, Benchmark, Job, Judge, ShareLink, Verdict
from runs.sharing import share_link_resolve, token_hash


def test_every_model_of_the_carried_apps_is_carried_or_named_with_its_reason():
    carried = {portability.model_label(m) for m in portability.carried_models()}
    for app_label in portability.CARRIED_APPS:
        for model in apps.get_app_config(app_label).get_models(include_auto_created=True):
            if model._meta.proxy:
                continue
            label = portability.model_label(model)
            assert label in carried or label in portability.NOT_CARRIED, f"{label} is neither carried nor named"
    for label, reason in portability.NOT_CARRIED.items():
        assert apps.get_model(label) and reason
        assert label not in carried


def test_tables_come_after_the_tables_their_keys_point_to():
    order = [portability.model_label(m) for m in portability.carried_models()]
    for position, model in enumerate(portability.carried_models()):
        for fk in portability._foreign_keys(model):
            target = portability.model_label(fk.related_model)
            if target in order and target != order[position]:
                assert order.index(target) < position, f"{order[position]} before {target}"


def _rows() -> dict[str, list]:
    """Every carried table's rows, but for the many-to-many tables' ids (the database numbers those) and the
    benchmarks' data generation (an import moves it on, so no cached page of another portal is read)."""
    out = {}
    for model in portability.carried_models():
        fields = [
            f.attname
            for f in model._meta.concrete_fields
            if not (model._meta.auto_created and f.primary_key) and f.attname != "data_generation"
        ]
        out[portability.model_label(model)] = list(model._default_manager.order_by(*fields).values_list(*fields))
    return out


def _wipe() -> None:
    """The portal emptied as a fresh database would be: no data, no users (migrate's groups stay)."""
    Benchmark.objects.all().delete()
    AgentModel.objects.all().delete()
    Judge.objects.all().delete()
    Job.objects.all().delete()
    apps.get_model("audits", "Campaign").objects.all().delete()
    apps.get_model("auth", "User").objects.all().delete()


@pytest.fixture
def portal(evolif_logged, editor, reviewer, settings):
    """The EvolIF fixture study with a share link, an API token, a job and an uploaded file."""
    benchmark = Benchmark.objects.get(slug=evolif_logged)
    ShareLink.objects.create(
        token_hash=token_hash("the-token"), benchmark=benchmark, state={"judge": "x"}, snapshot={"rows": []},
        data_version="verdicts=1;newest=1", created_by=editor,
    )  # fmt: skip
    Token.objects.create(user=reviewer, key="0123456789abcdef0123456789abcdef01234567")
    Job.objects.create(kind="ingest", params={"format": "evolif"}, created_by=editor)
    upload = Path(settings.MEDIA_ROOT) / "uploads" / "job-1" / "eval_1.jsonl"
    upload.parent.mkdir(parents=True)
    upload.write_text('{"uploaded": true}\n')
    return benchmark


def test_it_gives_back_every_row_and_file_of_the_portal(portal, tmp_path, settings):
    before = _rows()
    assert before["runs.verdict"] and before["runs.attemptrollup"] and before["runs.trajectorymessage"]
    archive = tmp_path / "portal.zip"
    call_command("portal_export", archive, "--with-password-hashes", "--no-progress")
    _wipe()
    upload = Path(settings.MEDIA_ROOT) / "uploads" / "job-1" / "eval_1.jsonl"
    upload.unlink()
    assert not Verdict.objects.exists()

    call_command("portal_import", archive, "--no-progress")

    assert _rows() == before
    assert upload.read_text() == '{"uploaded": true}\n'
    assert share_link_resolve("the-token").benchmark == portal
    manifest = json.loads(zipfile.ZipFile(archive).read("manifest.json"))
    assert manifest["format_version"] == portability.FORMAT_VERSION and manifest["code_version"]
    counts = {t["model"]: t["rows"] for t in manifest["tables"]}
    assert counts["runs.verdict"] == len(before["runs.verdict"])


def test_it_leaves_password_hashes_and_api_tokens_out_unless_asked(portal, tmp_path, reviewer):
    archive = tmp_path / "portal.zip"
    call_command("portal_export", archive, "--no-progress")
    names = zipfile.ZipFile(archive).namelist()
    assert "data/authtoken.token.jsonl" not in names
    assert reviewer.password.encode() not in zipfile.ZipFile(archive).read("data/auth.user.jsonl")
    _wipe()
    call_command("portal_import", archive, "--no-progress")
    moved = apps.get_model("auth", "User").objects.get(username="reviewer")
    assert moved.pk == reviewer.pk and not moved.has_usable_password()
    assert not Token.objects.exists()
    assert Group.objects.get(name="editor").user_set.get().username == "editor"


def test_a_user_whose_id_is_taken_gets_a_new_one_and_keeps_their_links(portal, tmp_path, editor):
    archive = tmp_path / "portal.zip"
    call_command("portal_export", archive, "--no-progress")
    _wipe()
    user_model = apps.get_model("auth", "User")
    user_model.objects.create_user("somebody", id=editor.pk)
    user_model.objects.create_user("reviewer")

    call_command("portal_import", archive, "--no-progress")

    moved = user_model.objects.get(username="editor")
    assert moved.pk != editor.pk
    assert share_link_resolve("the-token").created_by == moved
    assert Job.objects.get().created_by == moved
    assert list(moved.groups.values_list("name", flat=True)) == ["editor"]
    assert user_model.objects.get(username="somebody").pk == editor.pk


def _rewritten(archive: Path, out: Path, change) -> Path:
    """A copy of the archive with one member's bytes changed by `change(name, data)`."""
    with zipfile.ZipFile(archive) as src, zipfile.ZipFile(out, "w") as dst:
        for name in src.namelist():
            dst.writestr(name, change(name, src.read(name)))
    return out


def test_it_refuses_an_archive_of_a_newer_format_saying_why(portal, tmp_path):
    archive = tmp_path / "portal.zip"
    call_command("portal_export", archive, "--no-progress")

    def newer(name, data):
        if name != "manifest.json":
            return data
        manifest = json.loads(data)
        manifest["format_version"] = portability.FORMAT_VERSION + 1
        return json.dumps(manifest).encode()

    _wipe()
    with pytest.raises(CommandError, match=r"archive format 2 is newer than this portal reads \(1\)"):
        call_command("portal_import", _rewritten(archive, tmp_path / "newer.zip", newer), "--no-progress")
    assert not Benchmark.objects.exists()


def test_a_damaged_line_names_its_member_and_line_and_changes_nothing(portal, tmp_path):
    archive = tmp_path / "portal.zip"
    call_command("portal_export", archive, "--no-progress")

    def damaged(name, data):
        if name != "data/runs.verdict.jsonl":
            return data
        lines = data.split(b"\n")
        lines[2] = b"[1, 2"
        return b"\n".join(lines)

    _wipe()
    with pytest.raises(CommandError, match=r"data/runs.verdict.jsonl line 3: not JSON"):
        call_command("portal_import", _rewritten(archive, tmp_path / "bad.zip", damaged), "--no-progress")
    assert not Benchmark.objects.exists() and not Attempt.objects.exists()


def test_a_changed_member_fails_its_checksum(portal, tmp_path):
    archive = tmp_path / "portal.zip"
    call_command("portal_export", archive, "--no-progress")

    def changed(name, data):
        return data.replace(b'"pass"', b'"fail"', 1) if name == "data/runs.verdict.jsonl" else data

    _wipe()
    with pytest.raises(CommandError, match=r"data/runs.verdict.jsonl: its SHA-256 or size differs"):
        call_command("portal_import", _rewritten(archive, tmp_path / "changed.zip", changed), "--no-progress")
    assert not Benchmark.objects.exists()


def test_it_refuses_a_portal_with_data_unless_told_which_benchmarks_to_replace(portal, tmp_path):
    archive = tmp_path / "portal.zip"
    call_command("portal_export", archive, "--no-progress")
    verdicts = Verdict.objects.count()
    with pytest.raises(CommandError, match=rf"already holds data .*among them {portal.slug}.*--replace"):
        call_command("portal_import", archive, "--no-progress")
    with pytest.raises(CommandError, match="the archive holds no such benchmark"):
        call_command("portal_import", archive, "--replace", "nothing-like-it", "--no-progress")
    Verdict.objects.filter(pk=Verdict.objects.order_by("pk").first().pk).delete()

    call_command("portal_import", archive, "--replace", portal.slug, "--no-progress")

    assert Verdict.objects.count() == verdicts
    assert share_link_resolve("the-token").benchmark.slug == portal.slug


def test_an_archive_of_one_benchmark_holds_its_rows_alone(portal, tmp_path):
    other = Benchmark.objects.create(slug="other", name="Other", kind="checklist")
    archive = tmp_path / "one.zip"
    call_command("portal_export", archive, "--benchmark", "other", "--no-progress")
    with zipfile.ZipFile(archive) as zf:
        manifest = json.loads(zf.read("manifest.json"))
        counts = {t["model"]: t["rows"] for t in manifest["tables"]}
        assert manifest["benchmarks"] == ["other"] and manifest["media"] == []
        assert zf.read("data/runs.benchmark.jsonl").decode().startswith(f"[{other.pk},")
    assert counts["runs.benchmark"] == 1 and counts["runs.verdict"] == 0 and counts["runs.sharelink"] == 0
    assert counts["auth.user"] == apps.get_model("auth", "User").objects.count()
    with pytest.raises(CommandError, match="no benchmark nope in this portal"):
        call_command("portal_export", tmp_path / "nope.zip", "--benchmark", "nope", "--no-progress")


def test_an_archive_of_one_benchmark_goes_into_an_empty_portal_whole(portal, tmp_path):
    Benchmark.objects.create(slug="other", name="Other", kind="checklist")
    verdicts = sorted(Verdict.objects.values_list("id", "attempt_id", "item_id", "judge_id", "result"))
    archive = tmp_path / "one.zip"
    call_command("portal_export", archive, "--benchmark", portal.slug, "--no-progress")
    _wipe()

    call_command("portal_import", archive, "--no-progress")

    assert list(Benchmark.objects.values_list("slug", flat=True)) == [portal.slug]
    assert sorted(Verdict.objects.values_list("id", "attempt_id", "item_id", "judge_id", "result")) == verdicts
    assert share_link_resolve("the-token").benchmark == portal


def test_a_file_that_is_no_archive_is_named(tmp_path, db):
    path = tmp_path / "notes.txt"
    path.write_text("hello")
    with pytest.raises(CommandError, match=r"notes.txt: not a readable zip archive"):
        call_command("portal_import", path, "--no-progress")


def test_an_archive_whose_rollups_lack_a_column_gets_them_rebuilt(portal, tmp_path):
    """An archive written before AttemptRollup kept the items that passed and failed: its rollups come back whole,
    the lists rebuilt from the verdicts rather than left empty (a paired comparison would find no item flipped)."""
    before = _rows()
    assert any(row[-2] or row[-1] for row in before["runs.attemptrollup"])
    archive = tmp_path / "portal.zip"
    call_command("portal_export", archive, "--with-password-hashes", "--no-progress")
    member = "data/runs.attemptrollup.jsonl"
    with zipfile.ZipFile(archive) as zf:
        manifest = json.loads(zf.read("manifest.json"))
        entry = next(t for t in manifest["tables"] if t["member"] == member)
        keep = [n for n, column in enumerate(entry["columns"]) if column not in ("passed_items", "failed_items")]
        lines = [json.loads(line) for line in zf.read(member).splitlines() if line]
    older = "".join(json.dumps([row[n] for n in keep]) + "\n" for row in lines).encode()
    entry.update(
        columns=[entry["columns"][n] for n in keep], bytes=len(older), sha256=hashlib.sha256(older).hexdigest()
    )

    def without_the_lists(name, data):
        return older if name == member else json.dumps(manifest).encode() if name == "manifest.json" else data

    _wipe()
    call_command("portal_import", _rewritten(archive, tmp_path / "older.zip", without_the_lists), "--no-progress")

    def rebuilt(rows):  # new ids; the lists' ids in no order
        return sorted((*row[1:-2], *(frozenset(listed.split(",")) for listed in row[-2:])) for row in rows)

    assert rebuilt(_rows()["runs.attemptrollup"]) == rebuilt(before["runs.attemptrollup"])
