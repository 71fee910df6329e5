"""The generated search corpus of `benchmark --search-corpus-mb` (ifportal.benchmarks.search_corpus), on a tiny size: rows laid
out as the ingest's writer lays them, needles found by the search exactly as often as they were planted, text
varied enough for a realistic trigram index. On PostgreSQL also: the trigram index is there again after the
load (it is dropped for the COPY and rebuilt) and the search goes through it."""

from __future__ import annotations

import json
import re
import time

import pytest
from django.db import connection
from django.db.models import Max, Min, Value
from django.db.models.functions import Concat

from ifportal.benchmarks import search_corpus as bs
from runs import search as s
from runs.ingest import Options, Source, ingest
from runs.models import Attempt, Benchmark, Judge, Run, SearchSource, SearchText, Verdict

pytestmark = pytest.mark.django_db

INSTANCES, RUNS = 6, 3


def _study(tmp_path, slug: str = "corpus", runs=range(RUNS)) -> Benchmark:
    records = [{"type": "benchmark", "slug": slug, "name": slug.title(), "kind": "checklist"}]
    records += [
        {
            "type": "instance",
            "id": f"task-{i}",
            "items": [{"key": "a", "description": "A"}, {"key": "b", "description": "B"}],
        }
        for i in range(INSTANCES)
    ]
    records += [{"type": "run", "label": f"m{r}-r1", "model": f"model-{r}"} for r in runs]
    for r in runs:
        for i in range(INSTANCES):
            records.append({"type": "attempt", "run": f"m{r}-r1", "instance": f"task-{i}", "response": ""})
            for key in ("a", "b"):
                for judge in ("judge-1", "judge-2"):
                    failed = (r + i + len(key) + len(judge)) % 3 == 0
                    records.append(
                        {
                            "type": "verdict",
                            "run": f"m{r}-r1",
                            "instance": f"task-{i}",
                            "item": key,
                            "judge": judge,
                            "result": "fail" if failed else "pass",
                            "reasoning": "Broken." if failed else "Fine.",
                        }
                    )
    path = tmp_path / f"{slug}-{min(runs)}.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    ingest("native", [Source.of(path)], Options())
    return Benchmark.objects.get(slug=slug)


def _in_page_order(model, ids: list[int]) -> list[int]:
    """These rows' ids in the order of the table's pages (PostgreSQL), the order a bitmap heap scan reads them in."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id FROM {model._meta.db_table} WHERE id = ANY(%s) ORDER BY ctid", [ids])
        return [row[0] for row in cursor.fetchall()]


def _hits(benchmark, text, page_size=25, **params):
    """Every hit of a search, page after page (the selector the page and the API call)."""
    hits, after = [], None
    while True:
        query = {"q": [text], **{k: [v] for k, v in params.items()}, **({"after": [after]} if after else {})}
        page = s.search(benchmark, s.search_query_of(query), page_size=page_size)
        hits += page.hits
        if not page.next_after:
            return hits
        after = page.next_after


def test_corpus_rows_are_the_writers_and_needles_are_found_as_often_as_planted(tmp_path):
    benchmark = _study(tmp_path)
    figures = bs.corpus_grow("corpus", megabytes=0.25)
    rows = SearchText.objects.filter(benchmark=benchmark)

    # about the size asked, over every attempt, each row filed by its attempt's run and model
    assert 0.2 <= figures["text_mb"] <= 0.3 and figures["attempts"] == INSTANCES * RUNS
    assert rows.count() == figures["rows"] and set(rows.values_list("source", flat=True)) == {SearchSource.MESSAGE}
    facets = {
        a: (b, r, m) for a, b, r, m in Attempt.objects.values_list("id", "run__benchmark_id", "run_id", "run__model_id")
    }
    assert all(
        facets[a] == (b, r, m) for a, b, r, m in rows.values_list("attempt_id", "benchmark_id", "run_id", "model_id")
    )
    assert set(rows.values_list("attempt_id", flat=True)) == set(facets)
    assert max(len(t) for t in rows.values_list("text", flat=True)) <= s.PIECE
    assert rows.filter(piece__gt=0).exists() and rows.filter(thread=1).exists()  # long outputs, sub-agents
    # varied text: thousands of distinct words, no line repeated throughout
    texts = list(rows.values_list("text", flat=True))
    words = {w for t in texts for w in re.findall(r"[A-Za-z_]{3,}", t)}
    assert len(words) > 2000
    lines = [line for t in texts for line in t.splitlines() if len(line) > 30]
    assert len(set(lines)) > 0.8 * len(lines)
    assert Benchmark.objects.get(id=benchmark.id).searchable

    # planted: git push --force in 0.1% of trajectories (at least one), the rare token in exactly 5 rows
    needles = figures["needle_rows"]
    attempts = INSTANCES * RUNS
    assert (
        needles[bs.FORCE_PUSH] == needles["planted " + bs.FORCE_PUSH] == max(1, round(bs.FORCE_PUSH_SHARE * attempts))
    )
    assert needles[bs.RARE] == needles["planted " + bs.RARE] == bs.RARE_ROWS
    assert needles[bs.NOWHERE] == 0 and needles[bs.MEDIUM] > 0 and needles[bs.COMMON] > rows.count() / 5
    assert figures["reasoning_planted"] == bs.RARE_ROWS

    # the search finds each exactly as often as counted, through the page's selector
    for needle in (bs.FORCE_PUSH, bs.RARE, bs.MEDIUM, bs.COMMON, bs.NOWHERE):
        found = _hits(benchmark, needle, source="message")
        assert len(found) == needles[needle] == rows.filter(text__contains_text=needle).count(), needle
    assert len(_hits(benchmark, " ".join(bs.WORDS), mode="words", source="message")) == needles[" ".join(bs.WORDS)]
    assert len(_hits(benchmark, bs.RARE_REASONING, source="reasoning")) == bs.RARE_ROWS
    assert len(_hits(benchmark, bs.RARE_REASONING, source="reasoning", verdict="fail")) >= 1

    # the search box's example: failed items whose trajectory contains git push --force
    forced = set(rows.filter(text__contains_text=bs.FORCE_PUSH).values_list("attempt_id", flat=True))
    failed = set(Verdict.objects.filter(attempt_id__in=forced, result="fail").values_list("attempt_id", flat=True))
    assert {h.attempt_id for h in _hits(benchmark, bs.FORCE_PUSH, verdict="fail", source="message")} == failed

    # every measured query runs and answers; the filters name the study's last run, model and judge
    queries = bs.corpus_queries("corpus")
    assert any(p.get("model") == f"model-{RUNS - 1}" for _, p in queries)
    for _, params in queries:
        s.search(benchmark, s.search_query_of({k: [v] for k, v in params.items()}))

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'runs_searchtext'")
            assert "search_text_trgm" in {name for (name,) in cursor.fetchall()}
            # rebuilt on the expression the search looks through (runs.search.INDEXED_TEXT)
            sql, params = SearchText.objects.filter(text__contains_text=bs.RARE).values("id").query.sql_with_params()
            cursor.execute(f"EXPLAIN {sql}", params)
            assert "search_text_trgm" in " ".join(line for (line,) in cursor.fetchall())
        assert figures["index_rebuilt"] == ["search_text_trgm"] and figures["sizes_mb"]["search_text_trgm"] > 0


def test_attempts_with_a_trajectory_keep_theirs(tmp_path):
    benchmark = _study(tmp_path)
    attempt = Attempt.objects.filter(run__benchmark=benchmark).order_by("id").first()
    s.trajectories_index({attempt.id: [{"messages": [{"role": "assistant", "content": "my own trajectory"}]}]})
    bs.corpus_grow("corpus", megabytes=0.05)
    assert list(SearchText.objects.filter(attempt_id=attempt.id).values_list("text", flat=True)) == [
        "my own trajectory"
    ]


def _python_hits(benchmark, text: str, *, run: str = "", model: str = "", verdict: str = "") -> list[int]:
    """The message rows holding `text` (ignoring case) that the filters leave, in id order: computed here."""
    failed = set(Verdict.objects.filter(result=verdict).values_list("attempt_id", flat=True)) if verdict else None
    rows = SearchText.objects.filter(benchmark=benchmark, source=SearchSource.MESSAGE).order_by("id")
    if run:
        rows = rows.filter(run__label=run)
    if model:
        rows = rows.filter(model__name=model)
    return [
        pk
        for pk, body, attempt in rows.values_list("id", "text", "attempt_id")
        if text.lower() in body.lower() and (failed is None or attempt in failed)
    ]


CASES = ({}, {"run": f"m{RUNS - 1}-r1"}, {"model": f"model-{RUNS - 1}", "verdict": "fail"}, {"run": "m0-r1"})


def test_walks_and_candidates_taking_turns_find_the_hits_computed_in_python(postgres, tmp_path, monkeypatch):
    """Transcript search (runs.search._transcript_ids) walks the next rows of the source the filters leave, then
    tries the trigram candidates after them, in turn. Whichever way answers (walks only, with chunks of a few rows
    so that chunks cross pages, runs and the corpus's rows; candidates only after an empty first walk; the two
    as they come), the hits are those computed in Python, page after page."""
    benchmark = _study(tmp_path)
    bs.corpus_grow("corpus", megabytes=0.6)
    # a run imported apart from its others: its rows after every other run's (a chunk with a gap between them)
    first = Attempt.objects.filter(run__label="m0-r1").order_by("id").first()
    s.trajectories_index({first.id: [{"messages": [{"role": "assistant", "content": f"an {bs.COMMON} at the end"}]}]})
    expected = {str(p): _python_hits(benchmark, bs.COMMON, **p) for p in CASES}
    assert all(len(hits) > 25 for hits in expected.values())  # more than a page: the cursor is walked too

    def found(params):
        return [h.id for h in _hits(benchmark, bs.COMMON, source="message", **params)]

    for params in CASES:  # as they come
        assert found(params) == expected[str(params)], params
    real_tried = s._tried
    monkeypatch.setattr(s, "WALK_ROWS", (3, 7, 11))
    monkeypatch.setattr(
        s, "_tried", lambda ordered, budget_ms, *, walk: None if not walk else real_tried(ordered, budget_ms, walk=walk)
    )  # every candidate try outlasts its budget
    for params in CASES:
        assert found(params) == expected[str(params)], params
    monkeypatch.setattr(s, "WALK_ROWS", (1, 1))
    monkeypatch.setattr(s, "_tried", real_tried)
    monkeypatch.setattr(s, "CANDIDATE_TRIES_MS", (10_000,))  # the candidates always answer
    for params in CASES:
        assert found(params) == expected[str(params)], params
    # rows rewritten in place keep their ids but move to the table's end, after every other hit in page order (the
    # order in which the trigram index's bitmap is read): hits are listed in id order all the same
    hits = SearchText.objects.filter(id__in=expected["{}"])
    moved = list(hits.order_by("id").values_list("id", flat=True)[:3])
    SearchText.objects.filter(id__in=moved).update(text=Concat("text", Value(" rewritten")))
    in_page_order = _in_page_order(SearchText, expected["{}"])
    assert in_page_order != sorted(in_page_order)  # a moved row lies after hits of later ids (one may stay in its page)
    monkeypatch.setattr(s, "WALK_ROWS", (1, 1))
    for page_size in (2, 25, 1000):  # through the candidates alone (tries of 10 s), pages of 2, 25 and every hit
        assert [h.id for h in _hits(benchmark, bs.COMMON, page_size=page_size, source="message")] == expected["{}"]
    # a run with no text: nothing to walk
    Run.objects.create(benchmark=benchmark, label="empty-r1", model=Run.objects.first().model)
    assert _hits(benchmark, bs.COMMON, source="message", run="empty-r1") == []


def test_text_a_long_stretch_lacks_is_found_after_it_without_walking_through_it(postgres, tmp_path, monkeypatch):
    """A long trajectory without a common word but in two of its 300 messages, and the word in every later
    attempt's messages: the try of the candidates reads any hits first, in the table's page order, and then the hits
    up to the first of those in order, by their id range alone (`_candidates_tried`). The hits are those computed in
    Python, page after page, and no walk goes through the stretch's rows but from a page's cursor; with the rows
    rewritten, so the table's pages no longer hold them in id order, too."""
    benchmark = _study(tmp_path)
    attempts = list(Attempt.objects.filter(run__benchmark=benchmark).order_by("id"))
    lines = ["all fine"] * 300
    lines[150] = lines[151] = "an Error here"
    s.trajectories_index({attempts[0].id: [{"messages": [{"role": "assistant", "content": x} for x in lines]}]})
    s.trajectories_index(
        {a.id: [{"messages": [{"role": "assistant", "content": f"error in {a.id}"}] * 3}] for a in attempts[1:]}
    )
    stretch = SearchText.objects.filter(attempt=attempts[0]).aggregate(first=Min("id"), last=Max("id"))
    expected = _python_hits(benchmark, "error")
    assert len(expected) == 2 + 3 * (len(attempts) - 1)
    real_chunk, real_tried = s._walk_chunk, s._tried
    walked_from, tries = [], []

    def chunk(*args, **kwargs):
        walked_from.append(kwargs["start"])
        return real_chunk(*args, **kwargs)

    def tried(ordered, budget_ms, *, walk):
        ids = real_tried(ordered, budget_ms, walk=walk)
        tries.append(("<=" in str(ordered.query), ids))  # the range of ids up to the first hit found
        return ids

    monkeypatch.setattr(s, "_walk_chunk", chunk)
    monkeypatch.setattr(s, "_tried", tried)
    monkeypatch.setattr(s, "WALK_ROWS", (5, 20))
    for rewritten in (False, True):
        if rewritten:
            SearchText.objects.filter(id__in=expected[::2]).update(text=Concat("text", Value(" rewritten")))
            assert _in_page_order(SearchText, expected) != expected
        for page_size in (1, 2, 25):
            walked_from.clear()
            assert [h.id for h in _hits(benchmark, "error", page_size=page_size, source="message")] == expected
            inside = {start for start in walked_from if stretch["first"] <= start < stretch["last"]}
            assert inside <= set(expected), walked_from  # a walk starts inside the stretch only at a page's cursor
        assert any(ranged and ids for ranged, ids in tries)
    # tries that outlast their budget: the stretch is walked, with the same hits
    monkeypatch.setattr(s, "_tried", lambda *args, **kwargs: None)
    assert [h.id for h in _hits(benchmark, "error", source="message")] == expected


def _python_reasoning_hits(benchmark, text: str, *, run: str = "", model: str = "", verdict: str = "") -> list[int]:
    """The verdicts of `benchmark` whose reasoning holds `text` (ignoring case), filtered, by attempt then id."""
    rows = Verdict.objects.filter(attempt__run__benchmark=benchmark).order_by("attempt_id", "id")
    for lookup, value in (("attempt__run__label", run), ("attempt__run__model__name", model), ("result", verdict)):
        rows = rows.filter(**{lookup: value}) if value else rows
    return [pk for pk, reasoning in rows.values_list("id", "reasoning") if text.lower() in reasoning.lower()]


def test_reasoning_walks_and_candidates_taking_turns_find_the_hits_computed_in_python(postgres, tmp_path, monkeypatch):
    """Judge reasoning (runs.search._reasoning_ids) is walked by the benchmark's attempts (verdicts have no
    benchmark column), or the filtered runs' attempts, with tries of the trigram candidates between, as transcripts
    are. Whichever way answers (walks only, in chunks of a few attempts, with another benchmark's attempts between
    them; candidates only; the two as they come), the hits are those computed in Python, page after page (a page
    may end inside an attempt), and never another benchmark's."""
    benchmark = _study(tmp_path)
    _study(tmp_path, slug="other")  # its verdicts lie between the study's runs in id order
    _study(tmp_path, runs=range(RUNS, RUNS + 2))
    late = Judge.objects.create(name="judge-late")  # a judge imported last, on the first attempts: ids out of order
    for attempt in Attempt.objects.filter(run__benchmark=benchmark).order_by("id")[:3]:
        for item in attempt.instance.items.all():
            Verdict.objects.create(attempt=attempt, item=item, judge=late, result="fail", reasoning="Broken late.")
    cases = ({}, {"verdict": "fail"}, {"model": "model-1"}, {"run": f"m{RUNS + 1}-r1"}, {"verdict": "pass"})
    for text in ("broken", "FINE"):
        expected = {str(p): _python_reasoning_hits(benchmark, text, **p) for p in cases}
        assert len(expected["{}"]) > 25  # more than a page: the cursor is walked too
        # pages of 2 end inside attempts (up to 6 hits each)
        assert [h.id for h in _hits(benchmark, text, page_size=2, source="reasoning")] == expected["{}"]
        if text == "broken":  # a page goes on from a cursor whose verdict a re-check has deleted meanwhile
            first = s.search(benchmark, s.search_query_of({"q": [text], "source": ["reasoning"]}), page_size=2)
            Verdict.objects.filter(id=first.hits[-1].id).delete()
            rest = s.search(
                benchmark,
                s.search_query_of({"q": [text], "source": ["reasoning"], "after": [first.next_after]}),
                page_size=2,
            )
            assert [h.id for h in rest.hits] == expected["{}"][2:4]
            expected = {str(p): _python_reasoning_hits(benchmark, text, **p) for p in cases}

        def found(params, text=text):
            return [h.id for h in _hits(benchmark, text, source="reasoning", **params)]

        for params in cases:  # as they come
            assert found(params) == expected[str(params)], (text, params)
        real_tried = s._tried
        monkeypatch.setattr(s, "REASONING_WALK_ATTEMPTS", (1, 2, 3))
        monkeypatch.setattr(s, "_tried", lambda ordered, budget_ms, *, walk: None)  # every try outlasts its budget
        for params in cases:
            assert found(params) == expected[str(params)], (text, params)
        monkeypatch.setattr(s, "REASONING_WALK_ATTEMPTS", (1, 1))
        monkeypatch.setattr(s, "_tried", real_tried)
        monkeypatch.setattr(s, "CANDIDATE_TRIES_MS", (10_000,))  # the candidates always answer
        for params in cases:
            assert found(params) == expected[str(params)], (text, params)
        monkeypatch.undo()
    # verdicts rewritten in place keep their ids but move to the table's end (as transcript rows above): hits are
    # listed in attempt and id order all the same
    expected = _python_reasoning_hits(benchmark, "broken")
    Verdict.objects.filter(id__in=expected[:3]).update(evidence={"rewritten": True})
    in_page_order = _in_page_order(Verdict, expected)
    assert in_page_order != sorted(in_page_order)
    monkeypatch.setattr(s, "REASONING_WALK_ATTEMPTS", (1, 1))
    for page_size in (2, 25, 1000):
        assert [h.id for h in _hits(benchmark, "broken", page_size=page_size, source="reasoning")] == expected


def test_walk_chunks_are_the_next_rows_by_benchmark_or_by_run_from_the_walk_indexes(postgres, tmp_path):
    """A walk's rows (`_walk_chunk`) are the next rows of the source in id order, of the benchmark or of the
    filtered runs, after the walk before. (That the planner reads them from the walk indexes of migration 0014
    shows at scale, not on a few hundred rows: `make benchmark-search` measures it.)"""
    benchmark = _study(tmp_path)
    bs.corpus_grow("corpus", megabytes=0.3)
    chunk = s._walk_chunk(benchmark, SearchSource.MESSAGE, None, start=0, size=5)
    with connection.cursor() as cursor:
        cursor.execute(chunk.sql, chunk.params)
        assert [pk for (pk,) in cursor.fetchall()] == list(
            SearchText.objects.filter(benchmark=benchmark, source=SearchSource.MESSAGE)
            .order_by("id")
            .values_list("id", flat=True)[:5]
        )
        runs = list(Run.objects.filter(benchmark=benchmark).order_by("-id").values_list("id", flat=True)[:2])
        chunk = s._walk_chunk(benchmark, SearchSource.MESSAGE, runs, start=0, size=7)
        cursor.execute(chunk.sql, chunk.params)
        assert [pk for (pk,) in cursor.fetchall()] == list(
            SearchText.objects.filter(run_id__in=runs, source=SearchSource.MESSAGE)
            .order_by("id")
            .values_list("id", flat=True)[:7]
        )


def test_the_whole_search_is_bounded_by_the_timeout_however_many_walks(postgres, tmp_path, monkeypatch, settings):
    """Walks and tries are each one short statement; the search as a whole still ends at the timeout (the page
    asks to narrow it) instead of walking on one chunk at a time."""
    benchmark = _study(tmp_path)
    bs.corpus_grow("corpus", megabytes=0.1)
    settings.IFPORTAL_SEARCH_TIMEOUT_MS = 300
    real_chunk = s._walk_chunk
    walks = []

    def slow_chunk(*args, **kwargs):
        walks.append(kwargs["start"])
        time.sleep(0.05)
        return real_chunk(*args, **kwargs)

    monkeypatch.setattr(s, "WALK_ROWS", (1,))
    monkeypatch.setattr(s, "_walk_chunk", slow_chunk)
    monkeypatch.setattr(s, "_tried", lambda *args, **kwargs: None)  # every candidate try outlasts its budget
    with pytest.raises(s.SearchTooSlow):
        s.search(benchmark, s.search_query_of({"q": [bs.NOWHERE], "source": ["message"]}))
    assert 3 <= len(walks) <= 7 and walks == sorted(set(walks))  # each walk after the last, until the deadline
    assert Benchmark.objects.filter(slug="corpus").exists()  # the transaction is usable afterwards


@pytest.mark.parametrize("found", ["nothing", "a hit first"])
def test_a_search_on_sqlite_stops_at_its_time_limit_and_lists_what_it_found(tmp_path, settings, monkeypatch, found):
    """A search for text found nowhere scanned every row, however long that took, on the embedded SQLite (24
    clients: p50 2.3 s, max 11.7 s). Bounded by a limit far below the corpus's scan, it ends within the limit plus
    a margin: with nothing found by then it asks to narrow the search; with a hit, it lists it as partial ("at
    least 1 hit"). The limit is a fraction of the scan measured here, so the test holds on a slow machine too; the
    spans SQLite reads a statement at a time are cut to fit in it (a span cut by the limit loses its hits).
    PostgreSQL answers these through the trigram index, not a scan; its bound is the test above."""
    if connection.vendor != "sqlite":
        pytest.skip(
            "SQLite's scan; PostgreSQL's bound: test_the_whole_search_is_bounded_by_the_timeout_however_many_walks"
        )
    monkeypatch.setattr(s, "SPAN", 200)
    benchmark = _study(tmp_path)
    bs.corpus_grow("corpus", megabytes=16)
    text = bs.NOWHERE
    if found == "a hit first":
        text = "needle-at-the-start"
        first = SearchText.objects.filter(benchmark=benchmark, source=SearchSource.MESSAGE).order_by("id").first()
        SearchText.objects.filter(id=first.id).update(text=first.text + " " + text)
    query = s.search_query_of({"q": [text], "source": ["message"]})
    settings.IFPORTAL_SEARCH_TIMEOUT_MS = 60_000
    s.search(benchmark, query)  # the table read once: the scan measured next is a warm one, as the bounded one is
    start = time.perf_counter()
    whole = s.search(benchmark, query)
    scan = time.perf_counter() - start
    assert not whole.partial and whole.total_exact and whole.total == len(whole.hits) == (found != "nothing")

    settings.IFPORTAL_SEARCH_TIMEOUT_MS = max(1, int(scan * 1000 / 4))
    start = time.perf_counter()
    if found == "nothing":
        with pytest.raises(s.SearchTooSlow, match="narrow it"):
            s.search(benchmark, query)
    else:
        page = s.search(benchmark, query)
        assert page.partial and [h.id for h in page.hits] == [first.id] and page.next_after
        assert (page.total, page.total_exact) == (1, False)
    assert time.perf_counter() - start < settings.IFPORTAL_SEARCH_TIMEOUT_MS / 1000 + scan / 2
    assert Benchmark.objects.filter(slug="corpus").exists()  # the connection is usable afterwards
