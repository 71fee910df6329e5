"""A whole portal, or some of its benchmarks, in one archive and back (`manage.py portal_export` / `portal_import`).

The archive is a zip file: one JSON-lines member per table (`data/<app>.<model>.jsonl`, a row per line as a JSON
array in the manifest's column order), the files under MEDIA_ROOT (`media/...`, whole-portal archives only), and
`manifest.json` (format version, the code version that wrote it, the columns, row count, size and SHA-256 of every
member). Every concrete model of `CARRIED_APPS` is carried, found by walking Django's app registry in dependency
order, unless `NOT_CARRIED` names it with the reason; so a model added later travels without a change here
(tests/ifportal/test_portal_archive.py holds the rule). Rollups, disagreements and search pieces are carried as
stored: they are what the pages read, and copying them is faster than rebuilding them.

Primary keys are kept, so share links, permalinks and foreign keys are the same on the new portal. Four small
tables are matched by their natural key instead (`MATCHED`: groups, users, agent models, judges), so an archive
can go into a portal that already has the roles' groups or its own users: a row whose name exists is mapped to the
existing row, the keys pointing at it rewritten. Permissions are matched by (app label, codename).

Both ways stream: the export reads each table with a server-side iterator and writes lines as it reads; the import
reads a member line by line and writes batches (COPY on PostgreSQL, executemany elsewhere), in one transaction, so
memory does not grow with the portal and a bad archive changes nothing.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime
from importlib import metadata
from pathlib import Path

from django.apps import apps
from django.conf import settings
from django.contrib.auth.hashers import make_password
from django.core.management.color import no_style
from django.db import IntegrityError, connection, models, transaction
from django.db.models.constants import OnConflict
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime
from tqdm import tqdm

from runs.bulk import copy_in
from runs.models import AttemptRollup, Benchmark
from runs.search_index import reasoning_index_soon, reasoning_missing_listed
from runs.services import benchmarks_generation_bump, rollups_rebuild_for_attempts

FORMAT = "ifportal-portal-archive"
#: the archive layout this code writes and the newest it reads
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
#: the apps whose every concrete model is carried or named in NOT_CARRIED
CARRIED_APPS = ("auth", "authtoken", "runs", "audits", "ifportal")
#: models of CARRIED_APPS an archive leaves out, and why
NOT_CARRIED = {
    "auth.permission": "made by migrate on every portal; group and user permissions name them by (app, codename)",
    "ifportal.signindelay": "this server's sign-in throttling of typed names; the new portal starts without delays",
    "runs.reasoningtext": "the search's copy of judge reasoning, made again from the verdicts after the import "
    "(runs.search_index): an archive of one benchmark would otherwise carry every benchmark's reasoning",
    "runs.reasoningpending": "which attempts wait for that copy: the import lists every attempt whose copy is missing",
}
#: carried only with --with-password-hashes: they sign a person in
CREDENTIALS = {"authtoken.token"}
#: tables matched on import by a natural key (the row's name) instead of their primary key
MATCHED = {"auth.group": "name", "auth.user": "username", "runs.agentmodel": "name", "runs.judge": "name"}
#: rows per read from the database and per write to it
CHUNK = 5000


class ArchiveError(Exception):
    """The archive cannot be written or read: the message names the file, the member and line, and why."""


@dataclass
class Table:
    """One carried model: its label, model class and the columns a line holds (the concrete fields' attnames)."""

    label: str
    model: type[models.Model]
    fields: list[models.Field] = field(default_factory=list)

    @property
    def member(self) -> str:
        return f"data/{self.label}.jsonl"

    @property
    def columns(self) -> list[str]:
        return [f.attname for f in self.fields]


def model_label(model: type[models.Model]) -> str:
    return model._meta.label_lower


def carried_models() -> list[type[models.Model]]:
    """The concrete models of CARRIED_APPS (many-to-many tables included) not in NOT_CARRIED, parents first."""
    found = [
        model
        for app_label in CARRIED_APPS
        for model in apps.get_app_config(app_label).get_models(include_auto_created=True)
        if not model._meta.proxy and model_label(model) not in NOT_CARRIED
    ]
    return dependency_order(found)


def dependency_order(found: list[type[models.Model]]) -> list[type[models.Model]]:
    """`found` sorted so every model comes after the models its foreign keys point to (self references aside)."""
    pending = {model_label(m): m for m in found}
    ordered: list[type[models.Model]] = []
    done: set[str] = set()
    while pending:
        ready = [
            label
            for label, model in pending.items()
            if all(
                target in done or target == label or target not in pending
                for target in (model_label(f.related_model) for f in _foreign_keys(model))
            )
        ]
        if not ready:
            raise ArchiveError(f"foreign keys form a cycle among {sorted(pending)}")
        for label in sorted(ready, key=lambda name: found.index(pending[name])):
            ordered.append(pending.pop(label))
            done.add(label)
    return ordered


def _foreign_keys(model: type[models.Model]) -> list[models.ForeignKey]:
    return [f for f in model._meta.concrete_fields if f.is_relation and (f.many_to_one or f.one_to_one)]


def tables(*, with_credentials: bool) -> list[Table]:
    """The tables an archive holds, parents first."""
    return [
        Table(model_label(m), m, list(m._meta.concrete_fields))
        for m in carried_models()
        if with_credentials or model_label(m) not in CREDENTIALS
    ]


def code_version() -> str:
    """`git describe` of the checkout when there is one, else the installed package's version."""
    try:
        described = subprocess.run(
            ["git", "describe", "--always", "--dirty"],
            cwd=Path(__file__).resolve().parent.parent,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        described = ""
    if described:
        return described
    try:
        return metadata.version("ifportal")
    except metadata.PackageNotFoundError:
        return "unknown"


class ProgressBar:
    """One progress bar on stderr for the table being read or written: `bar(label, total)` starts the next one and
    returns its step function."""

    def __init__(self, *, disable: bool):
        self.disable, self.bar = disable, None

    def __call__(self, label: str, total: int) -> Callable[[int], None]:
        self.close()
        self.bar = tqdm(
            desc=label, total=total or None, unit=" rows", file=sys.stderr, leave=False, disable=self.disable
        )
        return self.bar.update

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


# --- export -------------------------------------------------------------------------------------------------


def _json_default(value):
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    raise TypeError(f"cannot write {type(value).__name__} to an archive")


def subset_filters(benchmark_ids: list[int]) -> dict[str, models.Q | None]:
    """For an archive of some benchmarks: each carried table's rows that belong to them (None: every row).

    A table reaches a benchmark through its non-null foreign keys (the shortest way; an audit table through its
    campaign when it has one); a campaign belongs when all its benchmarks are chosen. Tables that reach no
    benchmark (users, groups, agent models, judges, jobs) are carried whole: they are small and shared."""
    campaign_model = apps.get_model("audits", "Campaign")
    other = Benchmark.objects.exclude(id__in=benchmark_ids)
    campaign_ids = list(
        campaign_model.objects.filter(benchmarks__in=benchmark_ids)
        .exclude(benchmarks__in=other)
        .values_list("id", flat=True)
        .distinct()
    )
    roots = {model_label(campaign_model): campaign_ids, model_label(Benchmark): benchmark_ids}
    out: dict[str, models.Q | None] = {}
    for model in carried_models():
        label = model_label(model)
        if label in roots:
            out[label] = models.Q(id__in=roots[label])
            continue
        path = _path_to_root(model, roots)
        out[label] = None if path is None else models.Q(**{f"{path[0]}__in": roots[path[1]]})
    return out


def _path_to_root(model: type[models.Model], roots: dict[str, list[int]]) -> tuple[str, str] | None:
    """The shortest chain of non-null foreign keys from `model` to a root table (a campaign before a benchmark)."""
    frontier: list[tuple[type[models.Model], str]] = [(model, "")]
    seen = {model_label(model)}
    while frontier:
        reached = []
        following = []
        for current, prefix in frontier:
            for fk in _foreign_keys(current):
                if fk.null or fk.related_model is current:
                    continue
                target = model_label(fk.related_model)
                path = f"{prefix}{fk.name}"
                if target in roots:
                    reached.append((path, target))
                elif target not in seen:
                    seen.add(target)
                    following.append((fk.related_model, f"{path}__"))
        if reached:
            return sorted(reached, key=lambda p: list(roots).index(p[1]))[0]
        frontier = following
    return None


@dataclass
class ExportReport:
    members: list[dict]
    media_files: int


def portal_export(
    archive: Path,
    *,
    benchmark_slugs: list[str] | None = None,
    with_password_hashes: bool = False,
    progress: Callable[[str, int], Callable[[int], None]] | None = None,
) -> ExportReport:
    """Write the portal (or the benchmarks named) to `archive`, from one snapshot of the database."""
    progress = progress or (lambda label, total: lambda n: None)
    chosen = list(Benchmark.objects.filter(slug__in=benchmark_slugs or []).values_list("id", "slug"))
    if benchmark_slugs:
        unknown = sorted(set(benchmark_slugs) - {slug for _, slug in chosen})
        if unknown:
            raise ArchiveError(f"no benchmark {', '.join(unknown)} in this portal")
    filters = subset_filters([i for i, _ in chosen]) if benchmark_slugs else {}
    permission_model = apps.get_model("auth", "Permission")
    permissions = {
        pk: [app, codename]
        for pk, app, codename in permission_model.objects.values_list("id", "content_type__app_label", "codename")
    }
    partial = archive.with_name(archive.name + ".part")
    members = []
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        if connection.vendor == "postgresql" and outermost:
            with connection.cursor() as cursor:  # one snapshot for every table
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
            for table in tables(with_credentials=with_password_hashes):
                queryset = table.model._default_manager.all()
                row_filter = filters.get(table.label)
                if row_filter is not None:
                    queryset = queryset.filter(row_filter)
                queryset = queryset.order_by("pk")
                members.append(
                    _write_table(zf, table, queryset, permissions, with_password_hashes, progress(table.label, 0))
                )
            media = [] if benchmark_slugs else _write_media(zf, Path(settings.MEDIA_ROOT))
        manifest = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "code_version": code_version(),
            "created_at": timezone.now().isoformat(),
            "database": connection.vendor,
            "benchmarks": sorted(slug for _, slug in chosen) if benchmark_slugs else None,
            "with_password_hashes": with_password_hashes,
            "tables": members,
            "media": media,
        }
        with zipfile.ZipFile(partial, "a") as zf:
            zf.writestr(MANIFEST, json.dumps(manifest, indent=1))
    os.replace(partial, archive)
    return ExportReport(members=members, media_files=len(media))


def _write_table(zf, table: Table, queryset, permissions, with_password_hashes, step) -> dict:
    columns = table.columns
    to_permission = [
        i for i, f in enumerate(table.fields) if f.is_relation and model_label(f.related_model) == "auth.permission"
    ]
    password = columns.index("password") if table.label == "auth.user" else None
    digest, rows, size = hashlib.sha256(), 0, 0
    with zf.open(table.member, "w", force_zip64=True) as raw:
        buffer = []
        for values in queryset.values_list(*columns).iterator(chunk_size=CHUNK):
            if to_permission or password is not None:
                values = list(values)
                for i in to_permission:
                    values[i] = permissions[values[i]]
                if password is not None and not with_password_hashes:
                    values[password] = None
            buffer.append(json.dumps(values, default=_json_default, ensure_ascii=False, separators=(",", ":")))
            rows += 1
            if len(buffer) >= CHUNK:
                size += _flush(raw, buffer, digest)
                step(len(buffer))
                buffer = []
        size += _flush(raw, buffer, digest)
        step(len(buffer))
    return {"model": table.label, "member": table.member, "columns": columns, "rows": rows, "bytes": size,
            "sha256": digest.hexdigest()}  # fmt: skip


def _flush(raw, lines: list[str], digest) -> int:
    if not lines:
        return 0
    data = ("\n".join(lines) + "\n").encode()
    digest.update(data)
    raw.write(data)
    return len(data)


def _write_media(zf, root: Path) -> list[dict]:
    out = []
    if not root.is_dir():
        return out
    for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()):
        name = "media/" + path.relative_to(root).as_posix()
        digest, size = hashlib.sha256(), 0
        with path.open("rb") as src, zf.open(name, "w", force_zip64=True) as dst:
            while block := src.read(1 << 20):
                digest.update(block)
                dst.write(block)
                size += len(block)
        out.append({"member": name, "bytes": size, "sha256": digest.hexdigest()})
    return out


# --- import -------------------------------------------------------------------------------------------------


def manifest_read(zf: zipfile.ZipFile, archive: Path) -> dict:
    """The archive's manifest, refused when it is not one or of a format newer than this code reads."""
    try:
        manifest = json.loads(zf.read(MANIFEST))
    except KeyError as exc:
        raise ArchiveError(
            f"{archive}: no {MANIFEST}: not a portal archive (or an export that did not finish)"
        ) from exc
    except ValueError as exc:
        raise ArchiveError(f"{archive}: {MANIFEST} is not JSON: {exc}") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ArchiveError(f"{archive}: {MANIFEST} does not describe a {FORMAT}")
    version = manifest.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise ArchiveError(
            f"{archive}: archive format {version!r} is newer than this portal reads ({FORMAT_VERSION}); it was "
            f"written by code version {manifest.get('code_version')!r}: import it with that code or newer"
        )
    return manifest


def portal_is_empty() -> bool:
    """Whether the portal holds no data of runs and audits (users and the roles' groups do not count)."""
    for model in carried_models():
        if model._meta.app_label in ("runs", "audits") and model._default_manager.exists():
            return False
    return True


@dataclass
class ImportReport:
    rows: dict[str, int]
    #: seconds spent writing each table (the foreign keys are checked at the commit, after them)
    seconds: dict[str, float]
    media_files: int
    replaced: list[str]


def portal_import(
    archive: Path,
    *,
    replace: Iterable[str] = (),
    progress: Callable[[str, int], Callable[[int], None]] | None = None,
) -> ImportReport:
    """Load `archive` into this portal in one transaction: all of it, or nothing.

    Into an empty portal (no benchmark, run, job or campaign; users and groups may exist) every row keeps its
    primary key. A portal with data is refused unless `replace` names each of its benchmarks the archive also
    holds: those are deleted first (with their campaigns, when a campaign covers nothing else), then loaded."""
    progress = progress or (lambda label, total: lambda n: None)
    replace = sorted(set(replace))
    try:
        zf = zipfile.ZipFile(archive)
    except (OSError, zipfile.BadZipFile) as exc:
        raise ArchiveError(f"{archive}: not a readable zip archive: {exc}") from exc
    with zf:
        manifest = manifest_read(zf, archive)
        by_label = {t.label: t for t in tables(with_credentials=True)}
        members = manifest.get("tables") or []
        for entry in members:
            if entry.get("model") not in by_label:
                raise ArchiveError(f"{archive}: table {entry.get('model')!r} is not a table of this portal")
            _columns_check(archive, entry, by_label[entry["model"]])
        staged = _stage_media(zf, archive, manifest.get("media") or [])
        try:
            with transaction.atomic():
                merging = _target_check(archive, zf, manifest, replace)
                rows, seconds = _load_tables(zf, archive, members, by_label, progress, merging=merging)
                _rollups_completed(members)
                reasoning_missing_listed()  # copied into the search's index after the commit
                transaction.on_commit(reasoning_index_soon)
                # no cached page of an earlier portal is read under these benchmarks' keys
                benchmarks_generation_bump(_archive_benchmarks(zf, archive, manifest).values())
        except BaseException:
            if staged:
                shutil.rmtree(staged, ignore_errors=True)
            raise
    media_files = _media_commit(staged)
    return ImportReport(rows=rows, seconds=seconds, media_files=media_files, replaced=replace)


def _rollups_completed(members: list[dict]) -> None:
    """Rebuild the attempt rollups an archive carried without a column they have here (an archive written before
    AttemptRollup kept the items that passed and failed): a column left at its default would read as no item."""
    carried = next((m for m in members if m.get("model") == model_label(AttemptRollup)), None)
    here = {f.attname for f in AttemptRollup._meta.concrete_fields}
    if carried and not here <= set(carried.get("columns") or []):
        rollups_rebuild_for_attempts(AttemptRollup.objects.values_list("attempt_id", flat=True).distinct().order_by())


def _columns_check(archive: Path, entry: dict, table: Table) -> None:
    known = set(table.columns)
    unknown = [c for c in entry.get("columns") or [] if c not in known]
    if unknown:
        raise ArchiveError(f"{archive}: {entry['member']}: columns {unknown} are not columns of {table.label} here")
    for f in table.fields:
        if f.attname not in entry["columns"] and not f.has_default() and not f.null and not f.primary_key:
            raise ArchiveError(f"{archive}: {entry['member']}: no column {f.attname!r}, which {table.label} needs")


def _archive_benchmarks(zf: zipfile.ZipFile, archive: Path, manifest: dict) -> dict[str, int]:
    """The archive's benchmarks: {slug: id}."""
    entry = next((e for e in manifest["tables"] if e["model"] == "runs.benchmark"), None)
    if entry is None:
        return {}
    slug, pk = entry["columns"].index("slug"), entry["columns"].index("id")
    return {values[slug]: values[pk] for _, values in _lines(zf, archive, entry, check=False)}


def _target_check(archive: Path, zf: zipfile.ZipFile, manifest: dict, replace: list[str]) -> bool:
    """Refuse a portal with data unless `replace` names the benchmarks to replace, and delete those; whether the
    archive goes into a portal that keeps other data."""
    incoming = set(_archive_benchmarks(zf, archive, manifest))
    present = set(Benchmark.objects.values_list("slug", flat=True))
    not_in_archive = sorted(set(replace) - incoming)
    if not_in_archive:
        raise ArchiveError(f"{archive}: --replace {' '.join(not_in_archive)}: the archive holds no such benchmark")
    if portal_is_empty():
        return False
    clashing = sorted((incoming & present) - set(replace))
    if clashing or not replace:
        raise ArchiveError(
            f"this portal already holds data ({len(present)} benchmarks"
            + (f", among them {', '.join(clashing)} which the archive also holds" if clashing else "")
            + "): import into an empty database, or name the benchmarks the archive replaces with --replace SLUG ..."
        )
    doomed = list(Benchmark.objects.filter(slug__in=replace).values_list("id", flat=True))
    campaign_model = apps.get_model("audits", "Campaign")
    campaign_model.objects.filter(benchmarks__in=doomed).exclude(
        benchmarks__in=Benchmark.objects.exclude(id__in=doomed)
    ).delete()
    Benchmark.objects.filter(id__in=doomed).delete()
    return True


def _lines(zf: zipfile.ZipFile, archive: Path, entry: dict, *, check: bool = True) -> Iterator[tuple[int, list]]:
    """(line number, values) of a member, its size and SHA-256 checked against the manifest at the end."""
    member = entry["member"]
    digest, size, number = hashlib.sha256(), 0, 0
    try:
        raw = zf.open(member)
    except KeyError as exc:
        raise ArchiveError(f"{archive}: {member}: missing, though the manifest lists it") from exc
    with raw:
        for number, line in enumerate(io.BufferedReader(raw, 1 << 20), start=1):
            digest.update(line)
            size += len(line)
            try:
                values = json.loads(line)
            except ValueError as exc:
                raise ArchiveError(f"{archive}: {member} line {number}: not JSON: {exc}") from exc
            if not isinstance(values, list) or len(values) != len(entry["columns"]):
                raise ArchiveError(f"{archive}: {member} line {number}: expected {len(entry['columns'])} values")
            yield number, values
    if check and (digest.hexdigest() != entry.get("sha256") or size != entry.get("bytes")):
        raise ArchiveError(f"{archive}: {member}: its SHA-256 or size differs from the manifest's (damaged archive)")
    if check and number != entry.get("rows"):
        raise ArchiveError(f"{archive}: {member}: {number} rows, the manifest says {entry.get('rows')}")


class _Converter:
    """A line's values as the database takes them, in the target table's column order."""

    def __init__(self, archive: Path, entry: dict, table: Table, maps: dict[str, dict]):
        self.archive, self.entry, self.table = archive, entry, table
        position = {c: i for i, c in enumerate(entry["columns"])}
        self.steps = []
        for f in table.fields:
            source = position.get(f.attname)
            related = model_label(f.related_model) if f.is_relation else None
            self.steps.append((f, source, related, self._needs_prep(f)))
        self.maps = maps
        permission_model = apps.get_model("auth", "Permission")
        self.permissions = {
            (app, codename): pk
            for pk, app, codename in permission_model.objects.values_list("id", "content_type__app_label", "codename")
        }

    @staticmethod
    def _needs_prep(f: models.Field) -> bool:
        return isinstance(f, models.JSONField | models.DateTimeField | models.DateField | models.UUIDField)

    def row(self, number: int, values: list) -> list:
        out = []
        for f, source, related, prep in self.steps:
            if source is None:
                value = f.get_default()
            else:
                value = values[source]
            if related == "auth.permission":
                key = tuple(value) if isinstance(value, list) else None
                if key not in self.permissions:
                    raise ArchiveError(
                        f"{self.archive}: {self.entry['member']} line {number}: no permission {value!r} here"
                    )
                value = self.permissions[key]
            elif related in self.maps and value is not None:
                value = self.maps[related].get(value, value)
            if f.attname == "password" and self.table.label == "auth.user" and value is None:
                value = make_password(None)
            if prep and value is not None:
                if isinstance(f, models.DateTimeField) and isinstance(value, str):
                    value = parse_datetime(value)
                elif isinstance(f, models.DateField) and isinstance(value, str):
                    value = parse_date(value)
                elif isinstance(f, models.UUIDField):
                    value = uuid.UUID(value)
                value = f.get_db_prep_save(value, connection)
            out.append(value)
        return out


def _load_tables(
    zf, archive: Path, members: list[dict], by_label: dict[str, Table], progress, *, merging: bool
) -> tuple[dict[str, int], dict[str, float]]:
    maps: dict[str, dict] = {label: {} for label in MATCHED}
    counts, seconds = {}, {}
    # merging, the rows of no benchmark (jobs, API tokens) are the portal's own: one it already has is kept
    portal_wide = {label for label, row_filter in subset_filters([]).items() if row_filter is None} if merging else ()
    order = {t.label: i for i, t in enumerate(by_label.values())}
    for entry in sorted(members, key=lambda e: order[e["model"]]):
        table = by_label[entry["model"]]
        converter = _Converter(archive, entry, table, maps)
        step = progress(table.label, entry.get("rows") or 0)
        started = time.perf_counter()
        try:
            if table.model._meta.auto_created:
                counts[table.label] = _load_links(zf, archive, entry, table, converter, step, keep_pk=False)
            elif table.label in portal_wide and table.label not in MATCHED:
                counts[table.label] = _load_links(zf, archive, entry, table, converter, step, keep_pk=True)
            elif table.label in MATCHED:
                counts[table.label] = _load_matched(zf, archive, entry, table, converter, maps[table.label], step)
            else:
                counts[table.label] = _load_rows(zf, archive, entry, table, converter, step)
        except IntegrityError as exc:
            raise ArchiveError(
                f"{archive}: {entry['member']}: rows clash with rows already in this portal or break a constraint "
                f"({exc}); import into an empty database or replace the benchmarks they belong to"
            ) from exc
        seconds[table.label] = time.perf_counter() - started
    _sequences_reset([t.model for t in by_label.values()])
    return counts, seconds


def _insert_sql(table: Table) -> str:
    quote = connection.ops.quote_name
    columns = ", ".join(quote(f.column) for f in table.fields)
    marks = ", ".join(["%s"] * len(table.fields))
    return f"INSERT INTO {quote(table.model._meta.db_table)} ({columns}) VALUES ({marks})"


def _load_rows(zf, archive: Path, entry: dict, table: Table, converter: _Converter, step) -> int:
    quote = connection.ops.quote_name
    count = 0
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            columns = ", ".join(quote(f.column) for f in table.fields)
            with copy_in(cursor, quote(table.model._meta.db_table), columns) as copy:
                for number, values in _lines(zf, archive, entry):
                    copy.write_row(converter.row(number, values))
                    count += 1
                    if count % CHUNK == 0:
                        step(CHUNK)
        else:
            sql, batch = _insert_sql(table), []
            for number, values in _lines(zf, archive, entry):
                batch.append(converter.row(number, values))
                if len(batch) >= CHUNK:
                    cursor.executemany(sql, batch)
                    count += len(batch)
                    step(len(batch))
                    batch = []
            if batch:
                cursor.executemany(sql, batch)
                count += len(batch)
    step(count % CHUNK)
    return count


def _load_links(zf, archive: Path, entry: dict, table: Table, converter: _Converter, step, *, keep_pk: bool) -> int:
    """Rows inserted unless the portal has them already: a many-to-many table's, ids left to the database (the
    roles' groups get their permissions from migrate; a matched user may already be in a group), or, with
    `keep_pk`, a portal-wide table's when merging (a job or API token of the portal's own)."""
    quote = connection.ops.quote_name
    pk_column = -1 if keep_pk else [f.attname for f in table.fields].index(table.model._meta.pk.attname)
    free = [f for f in table.fields if keep_pk or not f.primary_key]
    sql = (
        f"{connection.ops.insert_statement(on_conflict=OnConflict.IGNORE)} {quote(table.model._meta.db_table)} "
        f"({', '.join(quote(f.column) for f in free)}) VALUES ({', '.join(['%s'] * len(free))}) "
        + connection.ops.on_conflict_suffix_sql(free, OnConflict.IGNORE, None, None)
    )
    count, batch = 0, []
    with connection.cursor() as cursor:
        for number, values in _lines(zf, archive, entry):
            row = converter.row(number, values)
            batch.append([v for i, v in enumerate(row) if i != pk_column])
            if len(batch) >= CHUNK:
                cursor.executemany(sql, batch)
                count += len(batch)
                step(len(batch))
                batch = []
        if batch:
            cursor.executemany(sql, batch)
            count += len(batch)
            step(len(batch))
    return count


def _load_matched(zf, archive: Path, entry: dict, table: Table, converter: _Converter, id_map: dict, step) -> int:
    """Rows of a table matched by name: an existing name takes the archive's id; a new one keeps its id if free."""
    manager = table.model._default_manager
    name = MATCHED[table.label]
    key_at = entry["columns"].index(name)
    pk_at = entry["columns"].index(table.model._meta.pk.attname)
    pk_column = [f.attname for f in table.fields].index(table.model._meta.pk.attname)
    insert_all = _insert_sql(table)
    free = [f for f in table.fields if not f.primary_key]
    quote = connection.ops.quote_name
    insert_free = (
        f"INSERT INTO {quote(table.model._meta.db_table)} ({', '.join(quote(f.column) for f in free)}) "
        f"VALUES ({', '.join(['%s'] * len(free))})"
    )
    count = 0
    with connection.cursor() as cursor:
        for number, values in _lines(zf, archive, entry):
            old_pk, natural = values[pk_at], values[key_at]
            existing = manager.filter(**{name: natural}).values_list("pk", flat=True).first()
            if existing is not None:
                id_map[old_pk] = existing
            else:
                row = converter.row(number, values)
                if not manager.filter(pk=old_pk).exists():
                    cursor.execute(insert_all, row)
                else:  # its id is taken: a new one, after the ids inserted so far
                    _sequences_reset([table.model])
                    cursor.execute(insert_free, [v for i, v in enumerate(row) if i != pk_column])
                    id_map[old_pk] = manager.filter(**{name: natural}).values_list("pk", flat=True).get()
            count += 1
            step(1)
    return count


def _sequences_reset(model_list: list[type[models.Model]]) -> None:
    statements = connection.ops.sequence_reset_sql(no_style(), model_list)
    if statements:
        with connection.cursor() as cursor:
            for statement in statements:
                cursor.execute(statement)


def _stage_media(zf: zipfile.ZipFile, archive: Path, media: list[dict]) -> Path | None:
    """The archive's media files unpacked (and checked) beside MEDIA_ROOT, moved in once the data commits."""
    if not media:
        return None
    root = Path(settings.MEDIA_ROOT)
    root.parent.mkdir(parents=True, exist_ok=True)
    staged = Path(tempfile.mkdtemp(prefix=".portal-import-", dir=root.parent))
    try:
        for entry in media:
            relative = entry["member"].removeprefix("media/")
            target = (staged / relative).resolve()
            if not entry["member"].startswith("media/") or staged.resolve() not in target.parents:
                raise ArchiveError(f"{archive}: {entry['member']}: a media file outside MEDIA_ROOT")
            target.parent.mkdir(parents=True, exist_ok=True)
            digest = hashlib.sha256()
            try:
                src = zf.open(entry["member"])
            except KeyError as exc:
                raise ArchiveError(f"{archive}: {entry['member']}: missing, though the manifest lists it") from exc
            with src, target.open("wb") as dst:
                while block := src.read(1 << 20):
                    digest.update(block)
                    dst.write(block)
            if digest.hexdigest() != entry.get("sha256"):
                raise ArchiveError(f"{archive}: {entry['member']}: its SHA-256 differs from the manifest's")
    except BaseException:
        shutil.rmtree(staged, ignore_errors=True)
        raise
    return staged


def _media_commit(staged: Path | None) -> int:
    if staged is None:
        return 0
    root = Path(settings.MEDIA_ROOT)
    moved = 0
    for path in sorted(p for p in staged.rglob("*") if p.is_file()):
        target = root / path.relative_to(staged)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, target)
        moved += 1
    shutil.rmtree(staged, ignore_errors=True)
    return moved
