"""ifportal.benchmarks.browser, the Chromium figure of `manage.py benchmark`, against a live server: a page with a
chart and one without paint and draw, signed in through the benchmark's session cookie, with numeric
figures and no console error; an error page's errors are counted; no chromium is said, not raised."""

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from ifportal.benchmarks import study as sb
from ifportal.benchmarks.browser import CHROMIUM, chromium_figures, chromium_line
from runs.ingest import Options, Source, ingest, ingest_units
from runs.ingest.layout import entries_of, plan_import

SLUG = "browser-study"


def _chromium_or_skip() -> None:
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is absent: install Debian's chromium (apt-get install chromium) to run browser tests")
    pytest.importorskip("playwright.sync_api")


@pytest.fixture
def study_cookie(transactional_db, tmp_path) -> str:
    """A tiny generated study, ingested as the benchmark ingests its own (committed: the live server reads
    it), and a reader's session cookie."""
    files = sb.study_write(sb.StudySize(instances=4, items_per_instance=3, models=2, repetitions=1, judges=2), tmp_path)
    ingest("octobench-instances", [Source.of(files.instances)], Options(benchmark=SLUG))
    entries, _ = entries_of([files.results], "octobench-scores")
    ingest_units("octobench-scores", plan_import("octobench-scores", entries, Options(benchmark=SLUG)))
    get_user_model().objects.create_user("benchmark-reader")
    return sb.session_cookie_for("benchmark-reader")


@pytest.mark.browser
def test_it_times_first_paint_and_charts_of_each_page_on_a_cold_cache_with_no_console_error(study_cookie, live_server):
    _chromium_or_skip()
    pages = {
        "leaderboard": reverse("runs:checklist-leaderboard", args=[SLUG]),
        "drill-down": reverse("runs:checklist-attempts", args=[SLUG]) + "?model=model-0",
        "missing page": "/b/no-such-benchmark/leaderboard/",
    }
    figures = chromium_figures(live_server.url, study_cookie, pages, samples=2)

    assert isinstance(figures, dict), figures  # chromium is here: a "not measured" string is a failure
    assert figures["samples"] == 2 and figures["browser"].startswith("chromium ")
    board, drill, missing = (figures["pages"][label] for label in pages)
    for page in (board, drill):
        assert page["statuses"] == [200]
        assert 0 < page["first_paint"]["median_ms"] <= page["first_paint"]["p95_ms"]
        assert 0 < page["usable"]["median_ms"] <= page["usable"]["p95_ms"] and page["target_usable_ms"] == 1000
        assert page["failed_samples"] == page["not_painted"] == 0 and page["target_first_paint_ms"] == 1000
        assert page["console_errors"] == 0, page["errors"]
    # the leaderboard's chart (drawn only for a signed-in reader: the cookie reached the server) after its paint
    assert board["charts"] == 1 and board["charts_not_drawn"] == 0
    assert board["charts_drawn"]["median_ms"] >= board["first_paint"]["median_ms"]
    assert drill["charts"] == 0 and drill["charts_drawn"] is None
    assert board["path"] == pages["leaderboard"]
    # a 404 is a console error in every sample (Chromium's "Failed to load resource"): errors are counted
    assert missing["statuses"] == [404] and missing["console_errors"] >= 2 and missing["errors"]
    line = chromium_line("leaderboard", board)
    assert line.startswith("leaderboard in Chromium (cold cache): first paint median ")
    assert (
        "(target 1000 ms); usable median " in line
        and "(target 1000 ms); 1 chart drawn median " in line
        and line.endswith("; 0 console errors")
    )


def test_it_says_not_measured_when_chromium_is_absent(tmp_path):
    figures = chromium_figures("http://127.0.0.1:9", "sessionid=x", {"home": "/"}, executable=tmp_path / "chromium")
    assert figures == f"not measured: {tmp_path / 'chromium'} is absent (Debian: apt-get install chromium)"


@pytest.mark.browser
def test_it_counts_a_page_that_does_not_load_and_goes_on_to_the_next():
    _chromium_or_skip()
    nowhere = f"http://127.0.0.1:{sb.free_port()}"  # nothing listens: the navigation fails at once
    figures = chromium_figures(nowhere, "sessionid=x", {"down": "/", "down too": "/b/"}, samples=2)
    for page in figures["pages"].values():
        assert page["failed_samples"] == 2 and page["first_paint"] is None and page["console_errors"] == 0
        assert page["errors"][0].startswith("failed: ") and "ERR_CONNECTION_REFUSED" in page["errors"][0]
    assert chromium_line("down", figures["pages"]["down"]) == (
        "down in Chromium (cold cache): first paint never (target 1000 ms); usable never (target 1000 ms); "
        "0 console errors; "
        "2 samples not loaded within 30 s"
    )
