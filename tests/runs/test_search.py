"""Search every transcript (runs.search): hits in messages, responses and reasoning, filters, escaping, access,
pagination, the index kept by the ingest, and the same hits on SQLite and PostgreSQL.

Every test runs on the default SQLite; with DATABASE_URL pointing at PostgreSQL the same tests check the
trigram/full-text path returns the same hits (the expected hits are computed here in Python).
"""

from __future__ import annotations

import importlib
import io
import json
from pathlib import Path

import pytest
from django.apps import apps
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from runs import search as s
from runs.ingest import Options, Source, ingest
from runs.models import Attempt, Benchmark, BenchmarkKind, ReasoningPending, ReasoningText, SearchText, Verdict
from runs.search_index import reasoning_index_catch_up
from runs.selectors import SEARCH_EXAMPLES

pytestmark = pytest.mark.django_db

LONG = "x" * (s.PIECE - 5) + "needle-across-the-cut" + "y" * 50
STUDY = [
    {"type": "benchmark", "slug": "acme", "name": "Acme", "kind": "checklist"},
    {
        "type": "instance",
        "id": "task-1",
        "items": [
            {"key": "no-force", "description": "Never force-push"},
            {"key": "tests", "description": "Run the tests"},
        ],
    },
    {"type": "instance", "id": "task-2", "items": [{"key": "no-force", "description": "Never force-push"}]},
    {"type": "run", "label": "a-r1", "model": "model-a"},
    {"type": "run", "label": "b-r1", "model": "model-b"},
    {
        "type": "attempt",
        "run": "a-r1",
        "instance": "task-1",
        "response": "Done. I ran Git Push --force at the end.",
        "threads": [
            {
                "messages": [
                    {"role": "user", "content": "Fix the bug and push."},
                    {
                        "role": "assistant",
                        "content": "",
                        "reasoning": "Tests first.",
                        "tool_calls": [
                            {"id": "c1", "name": "bash", "arguments": {"command": "git push --force origin main"}}
                        ],
                    },
                    {"role": "tool", "content": "forced update", "tool_call_id": "c1", "tool_name": "bash"},
                    {"role": "assistant", "content": "<script>alert('x')</script> all done, 100% sure_ok"},
                ]
            },
            {
                "meta": {"thread": "sub-agent 1"},
                "messages": [
                    {"role": "assistant", "content": LONG},
                ],
            },
        ],
    },
    {
        "type": "attempt",
        "run": "b-r1",
        "instance": "task-1",
        "response": "I did not push.",
        "threads": [
            {
                "messages": [
                    {"role": "user", "content": "Fix the bug and push."},
                    {"role": "assistant", "content": "git push origin main (no force)"},
                ]
            }
        ],
    },
    {
        "type": "attempt",
        "run": "b-r1",
        "instance": "task-2",
        "response": "",
        "threads": [{"messages": [{"role": "assistant", "content": "Running git push --force-with-lease now"}]}],
    },
    {
        "type": "verdict",
        "run": "a-r1",
        "instance": "task-1",
        "item": "no-force",
        "judge": "judge-1",
        "result": "fail",
        "reasoning": "The agent ran git push --force in message 1.",
    },
    {
        "type": "verdict",
        "run": "a-r1",
        "instance": "task-1",
        "item": "tests",
        "judge": "judge-1",
        "result": "pass",
        "reasoning": "Tests were run.",
    },
    {
        "type": "verdict",
        "run": "a-r1",
        "instance": "task-1",
        "item": "no-force",
        "judge": "judge-2",
        "result": "pass",
        "reasoning": "No forced push seen.",
    },
    {
        "type": "verdict",
        "run": "b-r1",
        "instance": "task-1",
        "item": "no-force",
        "judge": "judge-1",
        "result": "pass",
        "reasoning": "Pushed without force.",
    },
    {
        "type": "verdict",
        "run": "b-r1",
        "instance": "task-2",
        "item": "no-force",
        "judge": "judge-1",
        "result": "fail",
        "reasoning": "--force-with-lease is still a git push --force.",
    },
]


def _ingest(tmp_path: Path, records=STUDY, name="study.jsonl", *, reasoning_indexed=True):
    """Ingest `records`; then, unless told not to, what follows the import's commit, which a test's transaction
    never reaches: its judge reasoning copied into the search's index (runs.search_index)."""
    path = tmp_path / name
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n", encoding="utf-8")
    report = ingest("native", [Source.of(path)], Options())
    if reasoning_indexed:
        reasoning_index_catch_up(wait=True)
    return report


@pytest.fixture
def study(tmp_path):
    _ingest(tmp_path)
    return Benchmark.objects.get(slug="acme")


def _find(benchmark, text, **params):
    params = {"q": [text], **{k: v if isinstance(v, list) else [v] for k, v in params.items()}}
    return s.search(benchmark, s.search_query_of(params), page_size=params.pop("page_size", [100])[0]).hits


def _keys(hits):
    return sorted((h.source, h.run, h.instance, h.thread, h.message, h.item, h.judge) for h in hits)


def _expected(text: str) -> list[tuple]:
    """The hits computed in Python from the study itself: what both databases must return."""
    needle = text.lower()
    out = []
    for r in STUDY:
        if r["type"] == "attempt":
            for t, thread in enumerate(r["threads"]):
                for n, m in enumerate(thread["messages"]):
                    body = s.message_text(m).lower()
                    if needle in body:
                        out.append(("message", r["run"], r["instance"], t, n, "", ""))
            if needle in r["response"].lower():
                out.append(("response", r["run"], r["instance"], None, None, "", ""))
        elif r["type"] == "verdict" and needle in r["reasoning"].lower():
            out.append(("reasoning", r["run"], r["instance"], None, None, r["item"], r["judge"]))
    return sorted(out)


@pytest.mark.parametrize(
    "text", ["git push --force", "GIT PUSH", "100% sure_ok", "<script>", "push", "needle-across-the-cut"]
)
def test_it_finds_exactly_the_substring_hits_computed_in_python(study, text):
    assert _keys(_find(study, text)) == _expected(text)


def test_each_kind_of_text_is_found_and_linked_to_where_it_is(study):
    hits = _find(study, "git push --force", run="a-r1")
    by_source = {h.source: h for h in hits}
    assert set(by_source) == {"message", "response", "reasoning"}
    attempt = Attempt.objects.get(run__label="a-r1", instance__external_id="task-1")
    message = by_source["message"]
    assert (message.thread, message.message) == (0, 1)
    assert message.url == f"/attempts/{attempt.pk}/?thread=0&at=1#m-0-1"
    assert by_source["response"].url == f"/attempts/{attempt.pk}/"
    reasoning = by_source["reasoning"]
    assert (reasoning.item, reasoning.judge, reasoning.result) == ("no-force", "judge-1", "fail")
    item_id = attempt.instance.items.get(key="no-force").pk
    assert reasoning.url == f"/attempts/{attempt.pk}/#item-{item_id}"
    # the match is cut out for highlighting, as written in the text (case kept)
    assert [part for part, is_match in by_source["response"].segments if is_match] == ["Git Push --force"]


def test_filters_by_verdict_judge_item_model_run_and_source(study):
    # failed attempts whose trajectory contains the phrase: a-r1/task-1 (judge-1 failed it) and b-r1/task-2
    failed = _find(study, "git push --force", verdict="fail", source="message")
    assert sorted((h.run, h.instance) for h in failed) == [("a-r1", "task-1"), ("b-r1", "task-2")]
    # judge-2 passed everything it judged: its failures hold nothing
    assert _find(study, "git push --force", verdict="fail", judge="judge-2") == []
    passed_by_2 = _find(study, "push", verdict="pass", judge="judge-2")
    assert {h.run for h in passed_by_2} == {"a-r1"}
    assert {h.judge for h in passed_by_2 if h.source == "reasoning"} == {"judge-2"}
    assert {h.item for h in _find(study, "run", source="reasoning", item="tests")} == {"tests"}
    assert {h.model for h in _find(study, "push", model="model-b")} == {"model-b"}
    assert {h.run for h in _find(study, "push", run=["b-r1"])} == {"b-r1"}
    assert {h.source for h in _find(study, "push", source=["response", "reasoning"])} == {"response", "reasoning"}


def test_queries_too_short_too_long_or_malformed_are_refused(study):
    for params in (
        {"q": ["ab"]},
        {"q": ["a" * (s.MAX_QUERY + 1)]},
        {"q": ["push"], "mode": ["regex"]},
        {"q": ["push"], "verdict": ["maybe"]},
        {"q": ["push"], "source": ["files"]},
        {"q": ["push"], "after": ["message:x"]},
    ):
        with pytest.raises(s.SearchRefused):
            s.search_query_of(params)


def test_pages_follow_each_other_without_gaps_or_repeats(study):
    everything = _find(study, "push")
    assert len(everything) > 5
    seen, after = [], None
    for _ in range(20):
        params = {"q": ["push"], **({"after": [after]} if after else {})}
        page = s.search(study, s.search_query_of(params), page_size=2)
        seen += page.hits
        after = page.next_after
        if not after:
            break
    assert [(h.source, h.id) for h in seen] == [(h.source, h.id) for h in everything]


def test_the_ingest_replaces_the_rows_of_a_changed_trajectory(study, tmp_path):
    before = SearchText.objects.count()
    changed = [dict(r) for r in STUDY]
    changed[7] = {**changed[7], "threads": [{"messages": [{"role": "assistant", "content": "now I use rebase"}]}]}
    _ingest(tmp_path, changed, name="changed.jsonl")
    assert [h.instance for h in _find(study, "rebase")] == ["task-2"]
    assert [h.source for h in _find(study, "force-with-lease")] == ["reasoning"]  # only the verdict still says it
    assert SearchText.objects.count() == before  # one message replaced one message


def test_search_rebuild_restores_the_rows_the_ingest_wrote(study):
    rows = sorted(SearchText.objects.values_list("attempt_id", "source", "thread", "message", "piece", "text"))
    SearchText.objects.all().delete()
    assert _find(study, "git push --force", source="message") == []
    s.search_rebuild([study.pk])
    assert sorted(SearchText.objects.values_list("attempt_id", "source", "thread", "message", "piece", "text")) == rows


def test_long_messages_are_cut_in_overlapping_pieces_that_keep_every_short_match():
    text = "".join(chr(ord("a") + i % 26) for i in range(3 * s.PIECE))
    parts = s.pieces(text)
    assert all(len(p) <= s.PIECE for p in parts) and len(parts) == 4
    for start in range(0, len(text) - s.MAX_QUERY, 997):
        needle = text[start : start + s.MAX_QUERY]
        assert any(needle in p for p in parts)


# the page and the API -----------------------------------------------------------------
def test_the_page_highlights_hits_and_escapes_model_output(study, reviewer_client):
    response = reviewer_client.get(reverse("runs:search", args=["acme"]), {"q": "<script>"})
    assert response.status_code == 200
    html = response.content.decode()
    assert "<script>alert" not in html
    assert "<mark>&lt;script&gt;</mark>alert(&#x27;x&#x27;)" in html
    assert html.count("<mark>") == 1


def test_the_page_exports_its_hits_and_shares_them_through_the_frame(study, editor_client):
    """ "Where else did the agent do this?" had an answer on screen only: the page's hits now export as CSV and JSON,
    with where each was found and the text around it, and a share link freezes them."""
    import csv
    import io
    import re

    from runs.models import ShareLink

    url = reverse("runs:search", args=["acme"])
    page = editor_client.get(url, {"q": "git push --force"}).content.decode()
    assert "export=csv&amp;table=hits" in page and "Share…" in page
    assert "export=csv" not in editor_client.get(url).content.decode()  # no query, no hits to export
    lines = list(
        csv.DictReader(io.StringIO(editor_client.get(url, {"q": "git push --force", "export": "csv"}).content.decode()))
    )
    assert len(lines) == len(_expected("git push --force"))
    assert all("git push --force" in line["Text around the match"].lower() for line in lines)  # any case, as found
    assert {line["Found in"] for line in lines} == {"message", "response", "reasoning"}
    response = editor_client.post(
        reverse("runs:page-share-create", args=["acme"]),
        {"path": f"{url}?q=git+push+--force", "include_attempts": "on"},
    )
    assert re.search(r"/s/[A-Za-z0-9_-]+/", response.content.decode())
    assert len(ShareLink.objects.get().snapshot["tables"][0]["rows"]) == len(lines)


def test_the_page_makes_the_same_few_queries_however_many_hits(study, reviewer_client):
    url = reverse("runs:search", args=["acme"])
    reviewer_client.get(url)  # session, cached filter choices
    counts = {}
    for text in ("push", "git push --force"):  # 11 hits and 5, each in all three sources
        with CaptureQueriesContext(connection) as queries:
            response = reviewer_client.get(url, {"q": text})
        assert response.content.decode().count('class="hit"') == len(_expected(text))
        counts[text] = len(queries)
    # on PostgreSQL each source's query also sets its plan and timeout in a savepoint (four statements more), and
    # the sources are searched in a savepoint the time limit may roll back to; on SQLite each source looks up its
    # last row, where the spans it reads a statement at a time end (runs.search._spans)
    assert counts["push"] == counts["git push --force"] <= (15 if connection.vendor == "sqlite" else 29)


def test_the_api_returns_hits_with_offsets_and_a_next_link(study, reviewer_client, monkeypatch):
    monkeypatch.setattr(s, "PAGE_SIZE", 2)
    response = reviewer_client.get("/api/search/", {"benchmark": "acme", "q": "git push", "source": "message"})
    assert response.status_code == 200, response.content
    data = response.json()
    assert len(data["results"]) == 2
    first = data["results"][0]
    start, end = first["matches"][0]
    assert first["snippet"][start:end] == "git push"
    assert (first["run"], first["thread"], first["message"]) == ("a-r1", 0, 1)
    assert first["url"].endswith("?thread=0&at=1#m-0-1")
    assert data["next"] and "after=message" in data["next"]
    rest = reviewer_client.get(data["next"]).json()
    assert [(r["run"], r["instance"]) for r in rest["results"]] == [("b-r1", "task-2")] and rest["next"] is None
    assert reviewer_client.get("/api/search/", {"benchmark": "acme", "q": "ab"}).status_code == 400
    assert reviewer_client.get("/api/search/", {"benchmark": "nope", "q": "push"}).status_code == 404


def test_the_page_and_the_api_say_how_many_hits_there_are_exact_or_at_least(
    study, reviewer_client, monkeypatch, settings
):
    """Search showed no total: a page of 25 said nothing of the 2 or the 2,000 after it. A page holding every hit
    says how many; a page with more after it loads the count once it is shown (the hits wait for no count), exact
    when the count ends within its time, else "at least" the hits known (the page's, and one more for the next)."""
    import re

    url = reverse("runs:search", args=["acme"])
    total = len(_expected("push"))
    assert total > 3
    one = reviewer_client.get(url, {"q": "forced update"}).content.decode()
    assert "<strong>1 hit</strong>" in one and "Counting the hits" not in one  # one page: its hits, no count
    monkeypatch.setattr(s, "PAGE_SIZE", 2)
    html = reviewer_client.get(url, {"q": "push"}).content.decode()
    assert "hits</strong>" not in html  # not counted with the hits
    count_url = re.search(r'hx-get="(\?[^"]*count=1[^"]*)" hx-trigger="load"', html).group(1).replace("&amp;", "&")
    counted = reviewer_client.get(url + count_url, HTTP_HX_REQUEST="true").content.decode()
    assert counted.strip() == f'<strong id="search-total">{total} hits</strong>'
    plain = reviewer_client.get(url + count_url).content.decode()  # the link without htmx: the page, counted
    assert f"<strong>{total} hits</strong>" in plain and plain.count('class="hit"') == 2
    data = reviewer_client.get("/api/search/", {"benchmark": "acme", "q": "push"}).json()
    assert (data["total"], data["partial"]) == (None, False)  # counted only when asked
    data = reviewer_client.get("/api/search/", {"benchmark": "acme", "q": "push", "count": "1"}).json()
    assert (data["total"], data["total_exact"]) == (total, True)
    later = reviewer_client.get(data["next"]).json()  # a later page counts the whole search too
    assert (later["total"], later["total_exact"]) == (total, True)

    settings.IFPORTAL_SEARCH_COUNT_MS = 0  # the count is cut short at once
    counted = reviewer_client.get(url + count_url, HTTP_HX_REQUEST="true").content.decode()
    assert '<strong id="search-total">At least 3 hits</strong> (counting stopped at its time limit)' in counted
    data = reviewer_client.get("/api/search/", {"benchmark": "acme", "q": "push", "count": "1"}).json()
    assert (data["total"], data["total_exact"]) == (3, False)


def test_searches_past_the_process_limit_are_answered_busy_at_once(study, reviewer_client, settings):
    """On the embedded SQLite, 24 clients searching at once held every core and stalled other pages to 3.8 s: a
    process runs at most IFPORTAL_SEARCH_CONCURRENCY searches, and answers the rest 429 "busy" (with Retry-After)
    without touching the database, on the page and the API alike. PostgreSQL bounds each search by its timeout."""
    settings.IFPORTAL_SEARCH_CONCURRENCY = 1
    url = reverse("runs:search", args=["acme"])
    with s._search_slot():  # a search running in another thread of the process
        page = reviewer_client.get(url, {"q": "push"})
        api = reviewer_client.get("/api/search/", {"benchmark": "acme", "q": "push"})
    if connection.vendor == "postgresql":
        assert page.status_code == api.status_code == 200
        return
    assert page.status_code == api.status_code == 429
    assert "Other searches are running" in page.content.decode() and 'class="hit"' not in page.content.decode()
    assert int(page["Retry-After"]) == int(api["Retry-After"]) >= settings.IFPORTAL_SEARCH_TIMEOUT_MS / 1000
    assert "Other searches are running" in api.json()["detail"]
    assert reviewer_client.get(url, {"q": "push"}).status_code == 200  # the slot is free again


def test_blind_annotators_are_refused_on_the_page_and_the_api(study, django_user_model):
    annotator = django_user_model.objects.create_user("blind", password="pw-blind-1")
    annotator.groups.add(Group.objects.get_or_create(name="annotator")[0])
    client = Client()
    client.force_login(annotator)
    assert client.get(reverse("runs:search", args=["acme"]), {"q": "push"}).status_code == 403
    assert client.get("/api/search/", {"benchmark": "acme", "q": "push"}).status_code == 403


def test_every_kind_links_its_own_attempt_page():
    hit = s.SearchHit(
        source="message",
        id=1,
        attempt_id=7,
        run="r",
        model="m",
        instance="t/1",
        segments=[],
        url="",
        thread=0,
        message=3,
        turn=2,
    )
    assert s.hit_url(Benchmark(slug="d", kind="dialogue"), hit) == "/b/d/dialogue/dialogues/7/#turn-2"
    assert s.hit_url(Benchmark(slug="h", kind="hierarchy"), hit) == "/b/h/hierarchy/attempts/7/"
    assert s.hit_url(Benchmark(slug="c", kind="choice"), hit) == "/b/c/choice/tasks/"
    hit.instance = "t-1"
    assert s.hit_url(Benchmark(slug="c", kind="choice"), hit) == "/b/c/choice/tasks/t-1/"
    assert s.hit_url(Benchmark(slug="x", kind="conflict"), hit) == "/attempts/7/?thread=0&at=3#m-0-3"


def test_every_kind_has_a_search_example_of_its_own():
    """Found walking the demo: the search box of a dialogue or a multiple-choice benchmark suggested
    `git push --force`, a coding agent's command."""
    assert set(SEARCH_EXAMPLES) == set(BenchmarkKind.values)
    assert len(set(SEARCH_EXAMPLES.values())) == len(SEARCH_EXAMPLES)


def test_words_mode_finds_every_word_in_any_order(study):
    hits = _find(study, "main push", mode="words", source="message")
    assert sorted((h.run, h.instance, h.message) for h in hits) == [("a-r1", "task-1", 1), ("b-r1", "task-1", 1)]
    reasoning = _find(study, "FORCE without", mode="words", source="reasoning")
    assert [(h.run, h.item, h.judge) for h in reasoning] == [("b-r1", "no-force", "judge-1")]
    assert [part for part, is_match in reasoning[0].segments if is_match] == ["without", "force"]
    assert _find(study, "main rebase", mode="words", source="message") == []
    with pytest.raises(s.SearchRefused):
        s.search_query_of({"q": ["a b c"], "mode": ["words"]})


def _one_attempt(slug: str, said: list[str], *, reasoning: str | None = None) -> list[dict]:
    """A benchmark of one attempt whose one thread holds `said`, one assistant message each, and with `reasoning`
    one failed verdict that reasons so."""
    records = [
        {"type": "benchmark", "slug": slug, "name": slug.title(), "kind": "checklist"},
        {"type": "instance", "id": "task-1", "items": [{"key": "ok", "description": "Answer correctly"}]},
        {"type": "run", "label": "r1", "model": "model-a"},
        {
            "type": "attempt",
            "run": "r1",
            "instance": "task-1",
            "response": "",
            "threads": [{"messages": [{"role": "assistant", "content": text} for text in said]}],
        },
    ]
    if reasoning is not None:
        records.append(
            {
                "type": "verdict",
                "run": "r1",
                "instance": "task-1",
                "item": "ok",
                "judge": "judge-1",
                "result": "fail",
                "reasoning": reasoning,
            }
        )
    return records


JOINS = _one_attempt(
    "joins",
    [
        "The rule was broken in turn 3.",
        "brokenqinqturnq3 is one word",
        "broken\tin\nturn 3, across a tab and a line",
        "turn 3: nothing was broken in it",
        "Broken  in turn 3 (two spaces)",
    ],
)


@pytest.mark.parametrize(
    "text, messages",
    [
        ("broken in turn 3", [0]),
        ("BROKEN IN TURN", [0]),
        ("brokenqin", [1]),
        ("in\nturn 3", [2]),
        ("broken in", [0, 3]),
        ("broken  in", [4]),
        ("q3 is", [1]),
        ("n t", [0, 4]),
    ],
)
def test_phrases_are_found_exactly_across_spaces_tabs_lines_and_the_joining_letter(tmp_path, text, messages):
    """The transcript index is built on the text with whitespace joined into a letter (runs.search.INDEXED_TEXT):
    what it finds is still exactly the phrase as written, whatever whitespace or that letter the text holds."""
    _ingest(tmp_path, JOINS, name="joins.jsonl")
    hits = _find(Benchmark.objects.get(slug="joins"), text, source="message")
    assert sorted(h.message for h in hits) == messages


FOLDS = _one_attempt(
    "folds",
    [
        "\u212aelvin, written with a sign for degrees",
        "KELVIN in capitals",
        "\u212aelvin first," + " far" * 100 + " then kelvin",
        "ÉCHEC in capitals",
        "échec in small letters",
        "ÉCHEC in capitals, then échec",
    ],
    reasoning="\u212aelvin again",
)


@pytest.mark.parametrize("found_by", ["walks", "candidates"])
@pytest.mark.parametrize("mode", ["text", "words"])
def test_an_ascii_query_folds_ascii_letters_alone_on_both_databases(tmp_path, monkeypatch, mode, found_by):
    """SQLite's lower() folds ASCII letters alone; PostgreSQL folds an ASCII query's the same way (`_ilike`), so
    the two return the same hits for it whatever the text holds, and the snippet and highlight show the hit
    itself, not a letter folded otherwise 300 characters before it. Other queries fold every letter on
    PostgreSQL, ASCII letters alone on SQLite (the page's help says "ignore case"). On PostgreSQL the hits are
    the same whether the walks find them or the trigram index's candidates (a walk of one row, then a try)."""
    if found_by == "candidates":
        monkeypatch.setattr(s, "WALK_ROWS", (1,))
        monkeypatch.setattr(s, "CANDIDATE_TRIES_MS", (1_500,))
    _ingest(tmp_path, FOLDS, name="folds.jsonl")
    folds = Benchmark.objects.get(slug="folds")
    hits = _find(folds, "kelvin", mode=mode)
    assert [(h.source, h.message) for h in hits] == [("message", 1), ("message", 2)]
    assert [[part for part, is_match in h.segments if is_match] for h in hits] == [["KELVIN"], ["kelvin"]]
    small = {h.message: [part for part, is_match in h.segments if is_match] for h in _find(folds, "échec", mode=mode)}
    if connection.vendor == "postgresql":
        assert small == {3: ["ÉCHEC"], 4: ["échec"], 5: ["ÉCHEC", "échec"]}
    else:  # highlighted as found: SQLite does not fold É
        assert small == {4: ["échec"], 5: ["échec"]}


# PostgreSQL only -------------------------------------------------------------------------
def test_a_search_past_the_statement_timeout_asks_to_narrow_it(study, postgres, monkeypatch):
    def slow(*args):
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_sleep(2)")

    monkeypatch.setattr(s, "_search", slow)
    with pytest.raises(s.SearchTooSlow):
        s.search(study, s.search_query_of({"q": ["push"]}))
    # the transaction is usable afterwards
    assert Benchmark.objects.filter(slug="acme").exists()


BARE = [
    {"type": "benchmark", "slug": "bare", "name": "Bare", "kind": "checklist"},
    {"type": "instance", "id": "task-1", "items": [{"key": "ok", "description": "Answer correctly"}]},
    {"type": "run", "label": "r1", "model": "model-a"},
    {"type": "attempt", "run": "r1", "instance": "task-1", "response": ""},
    {"type": "verdict", "run": "r1", "instance": "task-1", "item": "ok", "judge": "exact-match", "result": "pass"},
]


def _search_tab(client, slug) -> bool:
    page = client.get(reverse("runs:checklist-leaderboard", args=[slug])).content.decode()
    return f'href="{reverse("runs:search", args=[slug])}"' in page


def test_the_search_tab_shows_only_on_a_benchmark_with_text_to_search(study, tmp_path, reviewer_client):
    _ingest(tmp_path, BARE, name="bare.jsonl")
    assert Benchmark.objects.get(slug="acme").searchable and _search_tab(reviewer_client, "acme")
    assert not Benchmark.objects.get(slug="bare").searchable and not _search_tab(reviewer_client, "bare")
    # a judge's reasoning imported later is text to search
    reasoned = {**BARE[-1], "judge": "judge-1", "reasoning": "The answer matches."}
    _ingest(tmp_path, [BARE[0], reasoned], name="reasoning.jsonl")
    assert Benchmark.objects.get(slug="bare").searchable and _search_tab(reviewer_client, "bare")


def test_search_rebuild_and_the_migration_mark_benchmarks_with_text(study, tmp_path):
    _ingest(tmp_path, BARE, name="bare.jsonl")
    Benchmark.objects.update(searchable=False)
    s.search_rebuild()
    assert dict(Benchmark.objects.values_list("slug", "searchable")) == {"acme": True, "bare": False}
    Benchmark.objects.update(searchable=False)
    SearchText.objects.all().delete()  # the reasoning alone still counts
    migration = importlib.import_module("runs.migrations.0009_benchmark_searchable")
    migration.searchable_backfill(apps, None)
    assert dict(Benchmark.objects.values_list("slug", "searchable")) == {"acme": True, "bare": False}


def test_transcript_phrases_are_looked_up_through_the_joined_trigram_index(study, postgres):
    """The migration's index expression and the lookup's are the same: the planner uses the index for a phrase
    (and for each word of a words search), where a mismatch would leave it to walk every row."""
    for lookup, text in (("contains_text", "broken in turn 3"), ("all_words", "push force")):
        # no benchmark or source: on a few rows the planner would rather read them through the walk indexes
        rows = SearchText.objects.filter(**{f"text__{lookup}": text})
        sql, sql_params = rows.values("id").query.sql_with_params()
        with transaction.atomic(), connection.cursor() as cursor:
            s._plan(cursor, timeout_ms=2000, walk=False)  # the settings the candidates are read with
            cursor.execute(f"EXPLAIN {sql}", sql_params)
            plan = "\n".join(line for (line,) in cursor.fetchall())
        assert "search_text_trgm" in plan, plan


def test_reasoning_is_found_right_after_the_import_and_through_its_index_once_copied(
    tmp_path, postgres, settings, monkeypatch
):
    """Judge reasoning reaches the trigram index after the import's commit (runs.search_index): before, a search
    reads the verdicts, says how many are pending and asks for the copy; after, the index's candidates give the
    same hits; changed and deleted reasoning follow (the verdict table's triggers)."""
    from runs import background, search_index

    settings.IFPORTAL_JOBS = "celery"  # the copy is a worker's: none runs here
    asked = []
    monkeypatch.setattr(background.current_app, "send_task", lambda name, **kw: asked.append(name))
    _ingest(tmp_path, reasoning_indexed=False)
    study = Benchmark.objects.get(slug="acme")
    reasoned = set(Verdict.objects.exclude(reasoning="").values_list("attempt_id", flat=True))
    assert reasoned and set(ReasoningPending.objects.values_list("attempt_id", flat=True)) == reasoned
    assert not ReasoningText.objects.exists()
    query = s.search_query_of({"q": ["push"]})
    reasoning = [h for h in _expected("push") if h[0] == "reasoning"]
    assert reasoning

    # a few attempts pending: their verdicts are read beside the index's candidates, which miss none of their hits
    expected_reasoning = sorted(
        r["reasoning"] for r in STUDY if r["type"] == "verdict" and "push" in r["reasoning"].lower()
    )
    assert sorted(s._reasoning_candidates(study, query).values_list("reasoning", flat=True)) == expected_reasoning
    monkeypatch.setattr(s, "PENDING_READ_ATTEMPTS", len(reasoned) - 1)
    assert s._reasoning_candidates(study, query) is None  # more pending: walks alone until the copy catches up
    before = s.search(study, query)
    assert before.reasoning_pending == len(reasoned) and asked == [search_index.REASONING_INDEX_TASK]
    assert _keys(before.hits) == _expected("push")
    s.search(study, query)
    assert len(asked) == 1  # asked once a minute at most

    assert reasoning_index_catch_up(batch=1) == len(reasoned)  # one attempt a batch
    assert not ReasoningPending.objects.exists()
    assert sorted(ReasoningText.objects.values_list("verdict_id", "attempt_id", "text")) == sorted(
        Verdict.objects.exclude(reasoning="").values_list("id", "attempt_id", "reasoning")
    )
    after = s.search(study, query)
    assert after.reasoning_pending == 0
    assert _keys(after.hits) == _expected("push")
    candidates = s._reasoning_candidates(study, query)
    assert sorted(candidates.values_list("reasoning", flat=True)) == expected_reasoning
    # the index answers the lookup the candidates are found by (a mismatch of expressions would read every row)
    sql, params = ReasoningText.objects.filter(text__contains_text="push").values("verdict_id").query.sql_with_params()
    with transaction.atomic(), connection.cursor() as cursor:
        s._plan(cursor, timeout_ms=2000, walk=False)  # the settings the candidates are read with
        cursor.execute("EXPLAIN " + sql, params)
        assert "reasoning_text_trgm" in "\n".join(row[0] for row in cursor.fetchall())

    # a reasoning changed by any writer lists its attempt again (the update trigger): found through the verdicts,
    # never through its old copy; an emptied one loses its copy
    changed, emptied = Verdict.objects.filter(reasoning__icontains="push").order_by("id")[:2]
    Verdict.objects.filter(id=changed.id).update(reasoning="Nothing of the sort happened.")
    Verdict.objects.filter(id=emptied.id).update(reasoning="")
    assert set(ReasoningPending.objects.values_list("attempt_id", flat=True)) == {
        changed.attempt_id,
        emptied.attempt_id,
    }
    assert len([h for h in s.search(study, query).hits if h.source == "reasoning"]) == len(reasoning) - 2
    reasoning_index_catch_up()
    assert ReasoningText.objects.get(verdict_id=changed.id).text == "Nothing of the sort happened."
    assert not ReasoningText.objects.filter(verdict_id=emptied.id).exists()
    assert len([h for h in s.search(study, query).hits if h.source == "reasoning"]) == len(reasoning) - 2

    # deleted verdicts take their copies with them
    Attempt.objects.filter(run__benchmark=study).delete()
    assert not ReasoningText.objects.exists()


def test_an_import_asks_for_its_reasoning_to_be_copied_where_jobs_run(tmp_path, postgres, settings, monkeypatch):
    """After a write commits, the catch-up goes where IFPORTAL_JOBS runs jobs: a Celery task, a thread, or now."""
    from runs import background, search_index

    _ingest(tmp_path, reasoning_indexed=False)
    sent, started = [], []
    monkeypatch.setattr(background.current_app, "send_task", lambda name, **kw: sent.append(name))
    monkeypatch.setattr(background.threading, "Thread", lambda **kw: started.append(kw["name"]) or _NoThread())
    settings.IFPORTAL_JOBS = "celery"
    search_index.reasoning_index_soon([1])
    settings.IFPORTAL_JOBS = "thread"
    search_index.reasoning_index_soon([1])
    assert sent == started == [search_index.REASONING_INDEX_TASK]
    background._threads.clear()  # the stand-in threads never ran
    assert ReasoningPending.objects.exists()
    settings.IFPORTAL_JOBS = "inline"
    search_index.reasoning_index_soon([1])
    assert not ReasoningPending.objects.exists() and ReasoningText.objects.exists()
    search_index.reasoning_index_soon([1])  # nothing pending: nothing asked
    assert len(sent) == 1 and len(started) == 1


class _NoThread:
    def start(self):
        pass


def test_reasoning_pending_in_another_benchmark_leaves_this_ones_index_in_use(study, tmp_path, postgres):
    """Whether search trusts the index's candidates is a benchmark's own affair: another benchmark's import that
    waits for its copy leaves this one's search on the index, and its page counts only its own attempts; the
    other's pending attempt is read beside its candidates."""
    other = [dict(r, reasoning="Pushed it.") if r["type"] == "verdict" else r for r in BARE]
    _ingest(tmp_path, other, name="bare.jsonl", reasoning_indexed=False)
    bare = Benchmark.objects.get(slug="bare")
    query = s.search_query_of({"q": ["push"]})
    assert s._reasoning_candidates(study, query) is not None and s.search(study, query).reasoning_pending == 0
    pending = s._reasoning_candidates(bare, query).values_list("reasoning", flat=True)
    assert list(pending) and set(pending) == {"Pushed it."} and s.search(bare, query).reasoning_pending == 1


def test_search_rebuild_copies_the_reasoning_the_index_lacks(study, postgres):
    """An archive carries no copies of reasoning (runs.portability.NOT_CARRIED) and a database may lose them:
    search_rebuild lists every attempt whose copy is missing and copies it."""
    copies = sorted(ReasoningText.objects.values_list("verdict_id", "text"))
    assert copies
    ReasoningText.objects.all().delete()
    call_command("search_rebuild", stdout=io.StringIO())
    assert sorted(ReasoningText.objects.values_list("verdict_id", "text")) == copies
    assert not ReasoningPending.objects.exists()


def test_a_writer_lists_an_attempt_already_listed_again(study, postgres):
    """A listed attempt is re-listed (updated, so locked by the writer until it commits), never passed over."""
    from runs.search_index import reasoning_changed

    attempt = Verdict.objects.exclude(reasoning="").values_list("attempt_id", flat=True).first()
    reasoning_changed([attempt, attempt, None])
    reasoning_changed([attempt])
    assert list(ReasoningPending.objects.values_list("attempt_id", flat=True)) == [attempt]
