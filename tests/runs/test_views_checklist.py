"""Checklist pages: leaderboard, drill-down, attempt viewer, instance, analyses."""

import csv
import html
import io
import re
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from runs.ingest import Options, Source, ingest
from runs.models import (
    AgentModel,
    Attempt,
    Benchmark,
    ChecklistItem,
    Instance,
    Judge,
    Run,
    Verdict,
)
from runs.selectors import checklist as selectors
from runs.services import rollups_rebuild_for_attempts
from runs.trajectory_store import trajectory_save

pytestmark = pytest.mark.django_db
XSS = "<script>alert(1)</script>"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def build_study(n_instances=3, models=("alpha", "beta"), judges=("j1", "j2")):
    """Instances with two items (System Prompt, User Query); model alpha fails c1 on odd instances."""
    bench, _ = Benchmark.objects.get_or_create(slug="octo", defaults={"name": "Octo", "kind": "checklist"})
    judge_objs = [Judge.objects.get_or_create(name=j)[0] for j in judges]
    start = Instance.objects.filter(benchmark=bench).count()
    attempts = []
    for n in range(start, start + n_instances):
        inst = Instance.objects.create(
            benchmark=bench,
            external_id=f"task-{n}",
            scaffold="claudecode",
            primary_category="Skill.md",
            content_hash="x",
            spec={"system_prompt": "be terse", "user_query": [f"do {n} " + XSS]},
        )
        items = [
            ChecklistItem.objects.create(
                instance=inst,
                key="c0",
                position=0,
                category="System Prompt",
                check_type="compliance",
                description="no emoji",
                content_hash="x",
            ),
            ChecklistItem.objects.create(
                instance=inst,
                key="c1",
                position=1,
                category="User Query",
                check_type="implementation",
                description="adds tests " + XSS,
                content_hash="x",
            ),
        ]
        for name in models:
            model, _ = AgentModel.objects.get_or_create(name=name)
            run, _ = Run.objects.get_or_create(benchmark=bench, label=f"{name}-r1", defaults={"model": model})
            attempt = Attempt.objects.create(run=run, instance=inst, assistant_turns=3 + n)
            attempts.append(attempt)
            for judge in judge_objs:
                for item in items:
                    fail = name == "alpha" and item.key == "c1" and n % 2 == 1
                    Verdict.objects.create(
                        attempt=attempt,
                        item=item,
                        judge=judge,
                        result="fail" if fail else "pass",
                        reasoning="missing tests " + XSS if fail else "ok",
                        evidence={"thread": 0, "message": 2} if fail else None,
                    )
    rollups_rebuild_for_attempts([a.id for a in attempts])
    return bench, attempts


def trajectory(attempt, *, long_text="x" * 5000):
    threads = [
        {
            "meta": {"thread": "main"},
            "tools": [{"name": "Bash", "description": "run"}],
            "messages": [
                {"role": "system", "content": "You are an agent."},
                {"role": "user", "content": "<system-reminder>keep it short</system-reminder> fix it"},
                {
                    "role": "assistant",
                    "content": "I will look " + XSS,
                    "reasoning": "think first",
                    "tool_calls": [{"id": "t1", "name": "Bash", "arguments": {"command": "ls"}}],
                },
                {"role": "tool", "tool_call_id": "t1", "tool_name": "Bash", "content": long_text},
                {"role": "assistant", "content": "done"},
            ],
        },
        {"meta": {"thread": "sub-agent 1"}, "tools": [], "messages": [{"role": "user", "content": "sub task"}]},
    ]
    return trajectory_save(attempt_id=attempt.id, threads=threads)


def test_it_shows_the_leaderboard_with_mean_and_std_across_judges(reviewer_client):
    bench, _ = build_study()
    response = reviewer_client.get(reverse("runs:checklist-leaderboard", args=[bench.slug]))
    assert response.status_code == 200
    body = response.content.decode()
    # alpha fails one instance of three under both judges: ISR 66.67 ± 0.00, CSR 5/6
    assert "66.67" in body and "83.33" in body and "100.00" in body
    assert 'href="/help/metrics/#checklist"' in body
    assert 'data-plotly="leaderboard-figure" data-figure="{' in body
    assert '<span class="pm">± 0.00</span>' in body  # two judges: their spread
    one = reviewer_client.get(reverse("runs:checklist-leaderboard", args=[bench.slug]) + "?judge=j1")
    assert "66.67" in one.content.decode()
    assert 'class="pm"' not in one.content.decode()  # a single judge has no spread to show


def test_it_sends_anonymous_visitors_to_the_login_page(client):
    bench, attempts = build_study(n_instances=1)
    for url in (
        reverse("runs:checklist-leaderboard", args=[bench.slug]),
        reverse("runs:attempt", args=[attempts[0].id]),
        reverse("runs:checklist-attempts", args=[bench.slug]),
        reverse("runs:instance", args=[attempts[0].instance_id]),
    ):
        response = client.get(url)
        assert response.status_code == 302 and "/login/" in response["Location"]


def test_it_answers_htmx_with_the_results_fragment_only(reviewer_client):
    bench, _ = build_study()
    response = reviewer_client.get(
        reverse("runs:checklist-leaderboard", args=[bench.slug]) + "?by=category", HTTP_HX_REQUEST="true"
    )
    body = response.content.decode()
    assert response.status_code == 200 and 'id="results"' in body
    results, toolbar = body.split('<div class="toolbar page-tools" id="page-tools" hx-swap-oob="true"')
    assert "<html" not in body and "<form" not in results  # the toolbar of the new state comes out of band
    assert "System Prompt" in results and "User Query" in results and "by=category&amp;export=csv" in toolbar


def test_it_shows_a_model_by_group_matrix_with_drilldown_links_and_small_cells(reviewer_client):
    bench, _ = build_study()
    body = reviewer_client.get(
        reverse("runs:checklist-leaderboard", args=[bench.slug]) + "?by=category&ci=on"
    ).content.decode()
    assert "group=User%20Query" in body and "model=alpha" in body
    assert "small-cell" in body  # three instances < 10
    assert "bootstrap" in body


def test_it_ignores_unknown_filter_values_and_filters_by_judge(reviewer_client):
    bench, _ = build_study(judges=("j1",))
    build_study(n_instances=0, judges=("j2",))
    body = reviewer_client.get(
        reverse("runs:checklist-leaderboard", args=[bench.slug]) + "?judge=nobody&sort=bogus"
    ).content.decode()
    assert "66.67" in body
    body = reviewer_client.get(
        reverse("runs:checklist-leaderboard", args=[bench.slug]) + "?judge=j1&sort=model"
    ).content.decode()
    assert body.index(">alpha<") < body.index(">beta<")


def test_it_refuses_a_benchmark_of_another_kind(reviewer_client):
    Benchmark.objects.create(slug="evo", name="Evo", kind="dialogue")
    assert reviewer_client.get(reverse("runs:checklist-leaderboard", args=["evo"])).status_code == 404


def _queries(client, url) -> int:
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(url).status_code == 200
    return len(ctx.captured_queries)


@pytest.mark.parametrize("suffix", ["", "?by=category", "?by=scaffold&ci=on", "?by=judge"])
def test_it_keeps_leaderboard_queries_independent_of_the_number_of_attempts(reviewer_client, suffix):
    bench, _ = build_study(n_instances=2)
    url = reverse("runs:checklist-leaderboard", args=[bench.slug]) + suffix
    small = _queries(reviewer_client, url)
    build_study(n_instances=8, models=("alpha", "beta", "gamma"))
    assert _queries(reviewer_client, url) == small
    # one of them the usage per model (runs.selectors.checklist.usage_by_model), one the per-instance counts behind
    # the rank intervals and tie groups (runs.selectors.checklist.compute_ties), one the figures the harness
    # reported (runs.selectors.reported), one the runs that are not a finished, scored evaluation
    # (runs.selectors.run_status), both the same for every state and cached with the #results fragment
    assert small <= 16


def test_it_lists_the_attempts_behind_a_cell_failing_first_with_their_failing_items(reviewer_client):
    bench, _ = build_study(n_instances=4)
    url = reverse("runs:checklist-attempts", args=[bench.slug]) + "?model=alpha&by=category&group=User+Query"
    body = reviewer_client.get(url).content.decode()
    assert body.index("task-1") < body.index("task-0") and body.index("task-3") < body.index("task-2")
    assert "adds tests &lt;script&gt;" in body and XSS not in body
    assert "2 failing" in body
    sp = reviewer_client.get(
        reverse("runs:checklist-attempts", args=[bench.slug]) + "?model=alpha&by=category&group=System+Prompt"
    ).content.decode()
    assert "all passed" in sp and "adds tests" not in sp


def test_the_drilldown_cuts_long_descriptions_and_escapes_every_part_of_a_failing_item(reviewer_client):
    bench, attempts = build_study(n_instances=2, judges=("<i>judge</i>",))
    item = ChecklistItem.objects.get(instance_id=attempts[2].instance_id, key="c1")  # alpha fails it on task-1
    ChecklistItem.objects.filter(pk=item.pk).update(
        key="<b>k</b>", category="<u>cat</u>", description="d" * 139 + "<>tail"
    )
    body = reviewer_client.get(reverse("runs:checklist-attempts", args=[bench.slug]) + "?model=alpha").content.decode()

    attempt_url = reverse("runs:attempt", args=[attempts[2].id])
    assert (
        f'<li><a href="{attempt_url}#item-{item.pk}"><code>&lt;b&gt;k&lt;/b&gt;</code></a> '
        f'<span class="badge">&lt;u&gt;cat&lt;/u&gt;</span> {"d" * 139}… '
        f'<span class="fail">✗ &lt;i&gt;judge&lt;/i&gt;</span></li>'
    ) in body
    assert "&lt;&gt;tail" not in body and "<>tail" not in body and "<b>k" not in body and "<i>judge" not in body


def test_it_keeps_drilldown_queries_bounded(reviewer_client):
    bench, _ = build_study(n_instances=2)
    url = reverse("runs:checklist-attempts", args=[bench.slug]) + "?model=alpha"
    small = _queries(reviewer_client, url)
    build_study(n_instances=10)
    assert _queries(reviewer_client, url) == small
    fragment = reviewer_client.get(url + "&page=1", HTTP_HX_REQUEST="true").content.decode()
    assert 'id="rows"' in fragment and "<html" not in fragment


def test_it_shows_an_attempt_with_threads_paired_tool_results_and_the_checklist(reviewer_client):
    _, attempts = build_study(n_instances=2)
    attempt = attempts[2]  # alpha on task-1: c1 failed by both judges
    trajectory(attempt)
    body = reviewer_client.get(reverse("runs:attempt", args=[attempt.id])).content.decode()
    assert "sub-agent 1" in body and "system reminder" in body and "turn 1" in body
    assert XSS not in body and "I will look &lt;script&gt;" in body
    assert 'id="m-0-3"' in body  # the tool result sits inside its call
    assert "show all 5000 characters" in body and "x" * 2001 not in body
    assert body.index('id="item-') < body.index("no emoji") and body.index("adds tests") < body.index("no emoji")
    assert "#m-0-2" in body  # evidence link of the failing item


def test_it_loads_the_full_text_of_a_long_message_escaped(reviewer_client):
    _, attempts = build_study(n_instances=1)
    trajectory(attempts[0], long_text="y" * 4000 + XSS)
    url = reverse("runs:attempt-text", args=[attempts[0].id])
    body = reviewer_client.get(url + "?thread=0&msg=3&field=content", HTTP_HX_REQUEST="true").content.decode()
    assert "y" * 4000 in body and XSS not in body and "&lt;script&gt;" in body
    assert reviewer_client.get(url + "?thread=0&msg=99").status_code == 404
    assert reviewer_client.get(url + "?thread=0&msg=2&field=call:0").content.decode().count("ls") == 1


def test_it_pages_long_threads_and_finds_text(reviewer_client):
    _, attempts = build_study(n_instances=1)
    messages = [{"role": "assistant", "content": f"step {n}"} for n in range(95)]
    trajectory_save(
        attempt_id=attempts[0].id, threads=[{"meta": {"thread": "main"}, "tools": [], "messages": messages}]
    )
    url = reverse("runs:attempt", args=[attempts[0].id])
    first = reviewer_client.get(url).content.decode()
    assert "step 39<" in first and "step 40<" not in first and "Load the next" in first
    more = reviewer_client.get(url + "?page=2", HTTP_HX_REQUEST="true").content.decode()
    assert "step 40<" in more and "<html" not in more and "Checklist" not in more
    assert "step 90<" in reviewer_client.get(url + "?at=90").content.decode()
    found = reviewer_client.get(url + "?q=step+7").content.decode()
    assert "step 7<" in found and "step 8<" not in found


def test_find_in_this_thread_reads_the_search_index_marks_each_match_and_opens_it_in_context(reviewer_client):
    """ "Find in this thread" compared every message row of the thread (1.7 s on 30,000 messages), marked nothing and
    linked nowhere: it reads the thread's search rows, shows the text around each match with the match marked (in
    the message too), and each match links to the message's window, where the message is marked."""
    _, attempts = build_study(n_instances=1)
    messages = [
        {"role": "assistant", "content": f"step {n}" + (" then <b>git PUSH</b> --force" if n == 70 else "")}
        for n in range(95)
    ]
    trajectory_save(
        attempt_id=attempts[0].id, threads=[{"meta": {"thread": "main"}, "tools": [], "messages": messages}]
    )
    url = reverse("runs:attempt", args=[attempts[0].id])
    with CaptureQueriesContext(connection) as queries:
        found = reviewer_client.get(url, {"thread": 0, "q": "git push"}).content.decode()
    compared = [q["sql"] for q in queries.captured_queries if "LIKE" in q["sql"].upper()]
    assert compared and all("runs_searchtext" in sql for sql in compared)  # no message row's text is compared
    assert "1 matching message" in found and "step 69" not in found
    assert "then &lt;b&gt;<mark>git PUSH</mark>&lt;/b&gt; --force" in found  # around it, and in the message
    assert found.count("<mark>git PUSH</mark>") == 2 and "<b>git" not in found
    link = '<a href="?thread=0&amp;at=70#m-0-70">Open #70 in context</a>'
    assert link in found
    context = reviewer_client.get(url, {"thread": 0, "at": 70}).content.decode()
    assert 'class="msg role-assistant at" id="m-0-70"' in context and "step 69<" in context and "step 79<" in context


def test_it_shows_an_instance_with_its_checklist_by_source_and_model_pass_rates(reviewer_client):
    _, attempts = build_study(n_instances=2)
    instance = attempts[2].instance  # task-1: alpha fails c1
    body = reviewer_client.get(reverse("runs:instance", args=[instance.id])).content.decode()
    assert "be terse" in body and "do 1 &lt;script&gt;" in body and XSS not in body
    assert body.index("System Prompt") < body.index("User Query")
    assert "0.00" in body and "0/2" in body and "100.00" in body


def test_it_shows_judge_sensitivity_length_and_comparison(reviewer_client):
    bench, _ = build_study(n_instances=4)
    judges = reviewer_client.get(reverse("runs:checklist-judges", args=[bench.slug])).content.decode()
    assert "Kendall" in judges and "rank under j1" in judges
    length = reviewer_client.get(reverse("runs:checklist-length", args=[bench.slug])).content.decode()
    assert "1-5 turns" in length and "6-10 turns" in length and 'data-plotly="length-figure" data-figure="{' in length
    compare = reviewer_client.get(
        reverse("runs:checklist-compare", args=[bench.slug]) + "?a=alpha-r1&b=beta-r1"
    ).content.decode()
    assert "gain (B − A)" in compare and "50.00" in compare  # ISR 50 -> 100
    assert "Fixed in B (2)" in compare and "Broken in B (0)" in compare


def test_the_compare_page_opens_with_two_different_runs_offered_and_says_what_to_do(reviewer_client):
    """Found walking the demo: before a choice both selects showed the first run and the page below was blank."""
    bench, _ = build_study(n_instances=2)
    body = reviewer_client.get(reverse("runs:checklist-compare", args=[bench.slug])).content.decode()
    assert '<option value="alpha-r1" selected>' in body.split('id="side-b"')[0]
    assert '<option value="beta-r1" selected>' in body.split('id="side-b"')[1]
    assert "Choose two runs" in body and "gain (B − A)" not in body


def test_the_length_page_reads_the_rollups_once_per_data_generation_and_filter(
    reviewer_client, monkeypatch, django_capture_on_commit_callbacks
):
    bench, attempts = build_study(n_instances=4)
    reads = []
    real = selectors.attempt_cells
    monkeypatch.setattr(selectors, "attempt_cells", lambda *args, **kwargs: reads.append(1) or real(*args, **kwargs))
    url = reverse("runs:checklist-length", args=[bench.slug])

    def page(query=""):  # the table (the page around it holds a fresh CSRF token each time)
        with django_capture_on_commit_callbacks(execute=True):
            body = reviewer_client.get(url + query).content.decode()
        return body[body.index('<table class="grid">') : body.index("</table>")]

    first = page()
    assert page() == first and len(reads) == 1  # the same page from the cache
    page("?judge=j1")
    assert len(reads) == 2  # another filter state: its own entry
    Verdict.objects.filter(attempt__in=attempts, result="pass").update(result="fail")
    rollups_rebuild_for_attempts([a.id for a in attempts])
    assert page() != first and len(reads) == 3  # a write moved the generation


def test_the_drilldown_tags_write_what_the_template_engine_wrote():
    """runs.templatetags.drilldown renders the failing items and judge badges in Python for speed: the same
    HTML, escaping included, as the template markup (and format_html) they replaced."""
    from django.template import Context, Template
    from django.utils.html import format_html_join

    from runs.templatetags.drilldown import ITEM, failing_items, judge_badges

    judges = {"<i>j</i>": (3, 1), "a&b": (2, 2), "'q\"": (0, 0)}
    engine = Template(
        '{% for judge, counts in judges.items %}<span class="badge {% if counts.0 and counts.1 < counts.0 %}'
        'fail{% elif counts.0 %}pass{% endif %}">{{ judge }}: {{ counts.1 }}/{{ counts.0 }}</span> {% endfor %}'
    )
    assert judge_badges(judges) == engine.render(Context({"judges": judges}))
    items = [
        {"id": 7, "key": "<b>k</b>", "category": "a&b", "short": "d\"'<>", "judges": ["<i>j</i>", "x"]},
        {"id": 8, "key": "c2", "category": "SP", "short": "plain", "judges": ["x"]},
    ]
    url = '/attempts/3/?a=1&b="2"'
    assert failing_items(items, url) == format_html_join(
        "", ITEM, ((url, i["id"], i["key"], i["category"], i["short"], ", ".join(i["judges"])) for i in items)
    )


def test_a_drilldown_row_lists_its_first_failing_items_and_folds_the_rest_into_a_details():
    from runs.templatetags.drilldown import SHOWN_FAILING, failing_items, failing_items_summary

    items = [
        {"id": n, "key": f"k{n}<", "category": "SP", "short": "d", "judges": ["j"]} for n in range(SHOWN_FAILING + 4)
    ]
    html = failing_items_summary(items, "/attempts/3/")
    shown, folded = html.split("<details", 1)
    assert shown == f'<ul class="failing-items">{failing_items(items[:SHOWN_FAILING], "/attempts/3/")}</ul>'
    assert f"<summary>4 more failing items ({SHOWN_FAILING + 4} in all)</summary>" in folded
    assert failing_items(items[SHOWN_FAILING:], "/attempts/3/") in folded and "k0&lt;" not in folded
    assert "<details" not in failing_items_summary(items[:SHOWN_FAILING], "/attempts/3/")


def test_the_filter_bars_dropdown_ticks_the_chosen_values_names_them_when_closed_and_escapes_everything():
    """runs.widgets.CheckboxDropdown: every value a checkbox (no Ctrl to pick several), the closed summary naming the
    choice ("all N" when none), and every label and value escaped; a bound form reads the ticked boxes back."""
    from django import forms

    from runs.widgets import CheckboxDropdown

    choices = [("a<b", "a<b"), ('q"x', "q'y&"), ("plain", "plain"), ("7", 7)]
    html = CheckboxDropdown(choices=choices, summary_noun="runs").render("run", ["a<b", "7"], {"id": "id_run"})
    assert html.startswith(
        '<details class="multi" id="id_run" data-noun="runs"><summary class="multi-summary">2 of 4: a&lt;b, 7</summary>'
    )
    assert html.count('type="checkbox" name="run"') == 4 and html.count(" checked>") == 2
    assert 'value="q&quot;x" id="id_run_1"> <span>q&#x27;y&amp;</span>' in html and "<b" not in html
    assert ">all 4 runs</summary>" in CheckboxDropdown(choices=choices, summary_noun="runs").render("run", [], None)
    many = CheckboxDropdown(choices=choices, summary_noun="runs").render("run", ["a<b", "plain", "7"], None)
    assert ">3 of 4: a&lt;b, plain and 1 more</summary>" in many

    class Form(forms.Form):
        run = forms.MultipleChoiceField(choices=choices, required=False, widget=CheckboxDropdown(summary_noun="runs"))

    from django.http import QueryDict

    form = Form(QueryDict("run=plain&run=7"))
    assert form.is_valid() and form.cleaned_data["run"] == ["plain", "7"]


def test_a_model_row_that_pools_two_runs_says_so_on_the_page_in_the_csv_and_the_api(reviewer_client):
    """A model run twice (another scaffold, a "+ feedback" run) had one leaderboard row that pooled both runs'
    attempts without a word: the row now names the runs it pools, and the run filter shows one alone."""
    bench, attempts = build_study(n_instances=2, models=("alpha", "beta"), judges=("j1",))
    alpha = [a for a in attempts if a.run.model.name == "alpha"]
    feedback = Run.objects.create(benchmark=bench, label="alpha + feedback", model=alpha[0].run.model)
    for source in alpha:
        attempt = Attempt.objects.create(run=feedback, instance=source.instance, assistant_turns=2)
        Verdict.objects.bulk_create(
            Verdict(attempt=attempt, item=v.item, judge=v.judge, result="pass") for v in source.verdicts.all()
        )
        rollups_rebuild_for_attempts([attempt.id])
    page = reverse("runs:checklist-leaderboard", args=[bench.slug])
    body = reviewer_client.get(page).content.decode()
    flag = re.findall(r'<span class="ci" title="([^"]*)">2 runs</span>', body)
    assert flag == [
        "This row pools the attempts of 2 runs of this model: alpha + feedback, alpha-r1. "
        "Choose runs in the filters to see one alone."
    ]
    assert "runs</span>" not in body.replace("2 runs</span>", "")  # beta has one run: no flag
    assert "2 runs</span>" not in reviewer_client.get(page + "?run=alpha-r1&run=beta-r1").content.decode()
    export = reviewer_client.get(reverse("runs:checklist-leaderboard", args=[bench.slug]) + "?export=csv")
    lines = {line["model"]: line["runs"] for line in csv.DictReader(io.StringIO(export.content.decode()))}
    assert lines == {"alpha": "alpha + feedback; alpha-r1", "beta": "beta-r1"}
    rows = reviewer_client.get(reverse("api:leaderboard", args=[bench.slug])).json()["rows"]
    assert {r["model"]: r["runs"] for r in rows} == {"alpha": ["alpha + feedback", "alpha-r1"], "beta": ["beta-r1"]}


@pytest.mark.parametrize(
    "query, said",
    [
        ("run=nobody-r1", "No run of this benchmark is labelled 'nobody-r1'."),
        ("judge=nobody", "No judge named 'nobody' scored this benchmark."),
        ("exclude=flagged_by_nobody", "unknown exclusion policy 'flagged_by_nobody'; one of: none, "),
    ],
)
def test_the_leaderboard_says_an_unknown_run_judge_or_policy_and_its_export_and_api_refuse_it(
    reviewer_client, query, said
):
    bench, _ = build_study(n_instances=1)
    page = reverse("runs:checklist-leaderboard", args=[bench.slug])
    notes = re.search(
        r'<div id="query-notes">(.*?)</div>', reviewer_client.get(f"{page}?{query}").content.decode(), re.S
    )
    assert said in html.unescape(notes.group(1))  # the page applies the default and says why, in the API's words
    swap = reviewer_client.get(f"{page}?{query}", headers={"HX-Request": "true"}).content.decode()
    assert said in html.unescape(swap.split('id="query-notes"')[1])
    for export in ("export=csv", "export=json"):
        refused = reviewer_client.get(f"{page}?{query}&{export}")
        assert refused.status_code == 400 and said in refused.content.decode()
    api = reviewer_client.get(reverse("api:leaderboard", args=[bench.slug]) + f"?{query}")
    assert api.status_code == 400 and said in str(api.json())
    assert reviewer_client.get(f"{page}?export=csv").status_code == 200


#: every format a checklist benchmark can be imported in: (format, files, options, benchmark slug)
IMPORTS = {
    "native": ("native", ["native/study.jsonl"], {}, "acme-agent-if"),
    "octobench": ("octobench-scores", ["octobench/scores.json"], {"model": "model-x", "judge": "judge-e"}, "octobench"),
    "inspect": ("inspect", ["inspect/tiny_if.json"], {"pass_threshold": 0.5}, None),
    "lm": (
        "lm-eval",
        [
            "lm_eval/acme__tiny-instruct-1b/results_2026-11-20T10-15-30.123456.json",
            "lm_eval/acme__tiny-instruct-1b/samples_ifeval_2026-11-20T10-15-30.123456.jsonl",
        ],
        {},
        "lm-eval-ifeval",
    ),
}
#: what each scorer prints, in words only a page about a benchmark scored by it may hold
SCORER_WORDS = {
    "octobench": ["OctoBench", "evaluate.py", "mini-vela", "avg_reward"],
    "inspect": ["Inspect AI, which wrote"],
    "lm": ["prompt_level_strict_acc"],
    "native": ["which has no reference scorer"],
}


@pytest.mark.parametrize("kind", list(IMPORTS))
def test_the_leaderboard_speaks_of_the_reference_scorer_of_the_benchmark_at_hand(reviewer_client, kind):
    fmt, files, options, slug = IMPORTS[kind]
    if kind == "octobench":
        ingest("octobench-instances", [Source.of(FIXTURES / "octobench/instances.jsonl")], Options())
    ingest(fmt, [Source.of(FIXTURES / name) for name in files], Options(**options))
    bench = Benchmark.objects.get(slug=slug) if slug else Benchmark.objects.get()
    html = reviewer_client.get(reverse("runs:checklist-leaderboard", args=[bench.slug])).content.decode()
    note = html[html.index('<section id="results">') : html.index("Each judge is scored separately")]
    for scorer, words in SCORER_WORDS.items():
        for word in words:
            assert (word in note) == (scorer == kind), (scorer, word)
    header = re.search(r'<th class="num" title="([^"]*)">Macro CSR %</th>', html).group(1)
    assert ("avg_reward" in header) == (kind == "octobench")
    attempt = Attempt.objects.filter(run__benchmark=bench).first()
    page = reviewer_client.get(reverse("runs:attempt", args=[attempt.id])).content.decode()
    if kind != "octobench":  # the attempt page names evaluate.py only beside what its scores file said
        assert not re.search("OctoBench|evaluate\\.py|mini-vela", page.split("<main", 1)[1])
