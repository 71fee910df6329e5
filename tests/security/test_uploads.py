"""Uploads: only JSON text files of bounded size; compressed files, archives and binaries are refused before any job."""

import bz2
import gzip
import io
import lzma
import tarfile
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from runs.models import Job

GOOD = b'{"type": "benchmark", "slug": "tiny", "kind": "checklist"}\n'


def _zip() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("study.jsonl", b"\n" * 10_000_000)  # 10 MB of newlines in a few KB: a small bomb
    return out.getvalue()


def _tar() -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as archive:
        info = tarfile.TarInfo("study.jsonl")
        info.size = len(GOOD)
        archive.addfile(info, io.BytesIO(GOOD))
    return out.getvalue()


REFUSED = [
    ("study.jsonl.gz", gzip.compress(b"\n" * 10_000_000), "is a gzip file"),
    ("study.jsonl", gzip.compress(GOOD), "is a gzip file"),  # the name does not matter, the bytes do
    ("study.zip", _zip(), "is a zip file"),
    ("study.jsonl", _zip(), "is a zip file"),
    ("study.json", bz2.compress(GOOD), "is a bzip2 file"),
    ("study.json", lzma.compress(GOOD), "is a xz file"),
    ("study.tar", _tar(), "is a tar file"),
    ("study.jsonl", _tar(), "is a tar file"),
    ("study.exe", b"MZ\x90\x00" + b"\x00" * 100, "only .json, .jsonl, .ndjson, .eval files are accepted"),
    ("notes.txt", GOOD, "only .json, .jsonl, .ndjson, .eval files are accepted"),
    ("study.jsonl", b'{"a": 1}\n\x00\x01\x02binary', "contains binary data"),
    (
        "log.eval",
        GOOD,
        "is not an Inspect AI .eval log (a zip archive)",
    ),  # .eval is the one archive taken, as a zip only
    ("log.eval", gzip.compress(GOOD), "is not an Inspect AI .eval log (a zip archive)"),
]


@pytest.mark.parametrize(("name", "content", "message"), REFUSED, ids=[f"{n}-{m.split()[-2]}" for n, _, m in REFUSED])
def test_it_refuses_the_upload_on_the_import_page(editor_client, name, content, message):
    response = editor_client.post("/import/", {"format": "native", "files": [SimpleUploadedFile(name, content)]})

    assert response.status_code == 400  # the form again, with the reason
    assert message in response.content.decode()
    assert Job.objects.count() == 0


@pytest.mark.parametrize(("name", "content", "message"), REFUSED, ids=[f"{n}-{m.split()[-2]}" for n, _, m in REFUSED])
def test_it_refuses_the_upload_on_the_api(editor, name, content, message):
    client = APIClient()
    client.force_authenticate(editor)

    response = client.post(
        "/api/ingest/", {"format": "native", "files": [SimpleUploadedFile(name, content)]}, format="multipart"
    )

    assert response.status_code == 400
    assert message in response.json()["files"][0]
    assert Job.objects.count() == 0


@pytest.mark.parametrize("name", ["study.jsonl", "study.json", "STUDY.JSONL", "study.ndjson"])
def test_it_accepts_json_text_files(editor, name, django_capture_on_commit_callbacks):
    client = APIClient()
    client.force_authenticate(editor)

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/api/ingest/", {"format": "native", "files": [SimpleUploadedFile(name, GOOD)]}, format="multipart"
        )

    assert response.status_code == 202
    assert Job.objects.get().state == "succeeded"


def test_it_refuses_an_upload_over_the_size_limit_before_reading_it(editor, settings):
    settings.IFPORTAL_MAX_UPLOAD_BYTES = 1000
    client = APIClient()
    client.force_authenticate(editor)

    response = client.post(
        "/api/ingest/",
        {"format": "native", "files": [SimpleUploadedFile("a.jsonl", b"{}\n" * 30_000)]},
        format="multipart",
    )

    assert response.status_code == 413
    assert Job.objects.count() == 0


def test_it_refuses_too_many_files(editor, settings):
    settings.IFPORTAL_MAX_UPLOAD_FILES = settings.DATA_UPLOAD_MAX_NUMBER_FILES = 3
    client = APIClient()
    client.force_authenticate(editor)
    files = [SimpleUploadedFile(f"part{n}.jsonl", GOOD) for n in range(4)]

    response = client.post("/api/ingest/", {"format": "native", "files": files}, format="multipart")

    assert response.status_code == 400
    assert "at most 3" in response.json()["files"][0]


def test_it_tells_the_browser_which_files_to_offer(editor_client):
    page = editor_client.get("/import/").content.decode()

    assert 'accept=".json,.jsonl,.ndjson,.eval"' in page
