"""Every kind's main page says which runs are not complete and, while one is being written (run settings status
"started", as `ingest --watch` marks it), its results region asks for itself every 10 s and stops once none is
(runs.selectors.run_status.page_status, templates/runs/partials/_live_poll.html). The checklist leaderboard's
own test is tests/runs/test_ingest_watch.py."""

import html
import re

import pytest
from django.urls import reverse

from runs.ingest import Options, Source, ingest
from runs.models import Attempt, Run

from .test_conflict import INSTANCES, instance, verdict, write
from .test_recheck_dialogue import build_run
from .test_views_choice import make_study
from .test_views_hierarchy import FIXTURES as MANYIH
from .test_views_hierarchy import add_run

pytestmark = pytest.mark.django_db

POLL = 'hx-trigger="every 10s"'


def _dialogue(tmp_path):
    run, _attempt, _items = build_run()
    return run.benchmark


def _hierarchy(tmp_path):
    ingest("manyih-data", [Source.of(MANYIH / "coding_small.json")], Options())
    return add_run(tmp_path, "coder · ordinal", "ordinal").benchmark


def _choice(tmp_path):
    return make_study()


def _conflict(tmp_path):
    records = [{"type": "benchmark", "slug": "octo-conflict", "name": "Octo conflict", "kind": "conflict"}]
    records += [instance(k, *v) for k, v in INSTANCES.items()]
    records.append({"type": "run", "label": "m1-r1", "model": "m1"})
    for key in INSTANCES:
        records += [
            {"type": "attempt", "run": "m1-r1", "instance": key, "response": "reply"},
            verdict("m1-r1", key, "A"),
        ]
    ingest("native", [write(tmp_path, records)], Options())
    return Run.objects.get(label="m1-r1").benchmark


#: page route, how its benchmark is built, the id of its polled region
PAGES = {
    "runs:dialogue-metrics": (_dialogue, "results"),
    "runs:dialogue-survival": (_dialogue, "results"),
    "runs:hierarchy-metrics": (_hierarchy, "results"),
    "runs:choice-metrics": (_choice, "tables"),
    "runs:conflict-metrics": (_conflict, "results"),
}


def _region_tag(page: str, region: str) -> str:
    return re.search(rf'<(?:section|div) id="{region}"[^>]*>', page).group(0)


@pytest.mark.parametrize("name", PAGES)
def test_a_run_being_written_shows_in_progress_and_its_page_polls_until_it_ends(name, reviewer_client, tmp_path):
    build, region = PAGES[name]
    benchmark = build(tmp_path)
    page_url = reverse(name, args=[benchmark.slug])

    page = reviewer_client.get(page_url).content.decode()
    assert POLL not in page and "hx-get" not in _region_tag(page, region)
    assert "Runs not complete" not in page

    run = Run.objects.filter(benchmark=benchmark).order_by("label").first()
    run.settings = {**(run.settings or {}), "status": "started", "watched": True}
    run.save(update_fields=["settings"])
    done = Attempt.objects.filter(run=run).count()
    page = reviewer_client.get(page_url).content.decode()
    assert "Runs not complete" in page
    assert f"in progress: {done} sample{'s' if done != 1 else ''} so far" in page
    tag = _region_tag(page, region)
    assert POLL in tag and f'hx-select="#{region}"' in tag

    # what the open page's region asks for every 10 s: its own fragment with the status, still polling
    polled = html.unescape(re.search(r'hx-get="([^"]+)"', tag).group(1))
    assert polled.split("?")[0] == page_url
    fragment = reviewer_client.get(polled, HTTP_HX_REQUEST="true", HTTP_HX_TARGET=region).content.decode()
    assert "<html" not in fragment and "in progress" in fragment and POLL in _region_tag(fragment, region)
    assert ("data-plotly" in page) <= ("data-plotly" in fragment)  # a chart on the page is redrawn with it

    # the run ends: the next poll answers a region that no longer polls
    run.settings = {**run.settings, "status": "success"}
    run.save(update_fields=["settings"])
    fragment = reviewer_client.get(polled, HTTP_HX_REQUEST="true", HTTP_HX_TARGET=region).content.decode()
    assert "in progress" not in fragment and POLL not in fragment


@pytest.mark.parametrize("name", ["runs:dialogue-metrics", "runs:choice-metrics"])
def test_the_poll_keeps_the_page_state(name, reviewer_client, tmp_path):
    build, region = PAGES[name]
    benchmark = build(tmp_path)
    Run.objects.filter(benchmark=benchmark).update(settings={"status": "started"})
    page_url = reverse(name, args=[benchmark.slug])
    query = "sort=label" if name == "runs:dialogue-metrics" else "sort=run"
    page = reviewer_client.get(f"{page_url}?{query}&export=").content.decode()
    polled = html.unescape(re.search(r'hx-get="([^"]+)"', _region_tag(page, region)).group(1))
    assert polled == f"{page_url}?{query}"  # the page's state, not the frame's parameters
