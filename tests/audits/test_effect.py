import csv
import io

from django.urls import reverse
from django.utils.html import escape

from audits import effect, selectors, services
from audits.models import AuditUnit
from runs.exclusions import exclusion_policies
from runs.metrics.checklist import Filters
from runs.models import ShareLink
from runs.selectors import checklist

from .conftest import client_for, label_all, values_for


def _label_all(campaign, users, bad_for):
    """Each user labels every unit they get; `bad_for[user]` lists the item keys they flag."""
    label_all(campaign, users, lambda user, unit: values_for(unit, bad_for.get(user.username, ())))


def test_it_changes_the_leaderboard_when_invalid_items_are_excluded(bench, campaign, annotator_a, annotator_b):
    _label_all(campaign, [annotator_a, annotator_b], {"annotator_a": ("x",), "annotator_b": ("x",)})
    benchmark = bench["benchmark"]
    excluded = selectors.excluded_item_ids(benchmark, "adjudicated_invalid")
    assert excluded == {bench["items"][(n, "x")].id for n in (1, 2, 3)}
    result = effect.exclusion_effect(benchmark.id, excluded, selectors.attempt_verdicts_on(excluded, benchmark.id))
    rows = {r.model: r for r in result.rows}
    assert (rows["beta"].rank_before, rows["alpha"].rank_before) == (1, 2)
    assert (rows["alpha"].rank_after, rows["beta"].rank_after) == (1, 2)
    assert rows["alpha"].isr_after == 100.0 and round(rows["beta"].isr_after, 2) == 33.33
    assert result.tau == -1.0
    assert [(s.up, s.down) for s in result.swaps] == [("alpha", "beta")]
    assert {d["item_id"] for d in result.swaps[0].items} == excluded
    # the metric hook agrees with a direct call
    direct = checklist.leaderboard_rows(benchmark.id, Filters(), excluded_items=excluded)
    assert {r.model: r.isr for r in direct} == {"alpha": 100.0, "beta": rows["beta"].isr_after}


def test_it_distinguishes_flagged_by_either_from_flagged_by_both(bench, campaign, lead, annotator_a, annotator_b):
    _label_all(campaign, [annotator_a, annotator_b], {"annotator_a": ("x", "y"), "annotator_b": ("x",)})
    benchmark = bench["benchmark"]
    # the y units are disputed, so the campaign is unfinished: policies read it only when it is chosen
    assert selectors.excluded_item_ids(benchmark, "flagged_by_either") == set()
    either = selectors.excluded_item_ids(benchmark, "flagged_by_either", [campaign.pk])
    both = selectors.excluded_item_ids(benchmark, "flagged_by_both", [campaign.pk])
    assert both == {bench["items"][(n, "x")].id for n in (1, 2, 3)}
    assert either == both | {bench["items"][(n, "y")].id for n in (1, 2, 3)}
    assert (
        selectors.excluded_item_ids(benchmark, "adjudicated_invalid", [campaign.pk]) == both
    )  # y: disputed, not closed
    for unit in AuditUnit.objects.filter(state="disputed"):
        services.unit_adjudicate(unit, lead=lead, final_status="valid")
    assert selectors.excluded_item_ids(benchmark, "adjudicated_invalid") == both


def test_it_excludes_nothing_without_audits(bench):
    assert selectors.excluded_item_ids(bench["benchmark"], "flagged_by_either") == set()


def test_it_shows_the_rank_change_on_the_effect_page(bench, campaign, lead, annotator_a, annotator_b):
    _label_all(campaign, [annotator_a, annotator_b], {"annotator_a": ("x",), "annotator_b": ("x",)})
    page = client_for(lead).get("/audits/effect/octo-test/?exclude=adjudicated_invalid")
    html = page.content.decode()
    assert page.status_code == 200
    assert "alpha gained on beta" in html and "▲ 1" in html and "-1.000" in html
    assert "Check the output is nice" in html


def test_the_effect_page_exports_its_tables_and_shares_through_the_frame(
    bench, campaign, lead, annotator_a, annotator_b
):
    """The effect page, a leaderboard before and after a policy, had no export and no share link."""
    _label_all(campaign, [annotator_a, annotator_b], {"annotator_a": ("x",), "annotator_b": ("x",)})
    client, url = client_for(lead), "/audits/effect/octo-test/?exclude=adjudicated_invalid"
    html = client.get(url).content.decode()
    assert f"{url}&amp;export=csv&amp;table=effect" in html and "Share…" in html
    lines = list(csv.DictReader(io.StringIO(client.get(url + "&export=csv&table=effect").content.decode())))
    assert [(line["Model"], line["Rank before"], line["Rank after"], line["ISR % after"]) for line in lines] == [
        ("alpha", "2.0", "1.0", "100.00"),
        ("beta", "1.0", "2.0", "33.33"),
    ]
    document = client.get(url + "&export=json").json()
    assert document["facts"]["kendall_tau"] == -1.0 and document["facts"]["items_excluded"] == 3
    swaps = next(t for t in document["tables"] if t["name"] == "swaps")["rows"]
    assert {(r["gained"], r["on"], r["item"]) for r in swaps} == {("alpha", "beta", "x")}
    response = client.post(reverse("runs:page-share-create", args=["octo-test"]), {"path": url})
    assert "/s/" in response.content.decode() and ShareLink.objects.get().snapshot["tables"][0]["name"] == "effect"


def test_it_answers_the_excluded_items_by_api(bench, campaign, lead, annotator_a, annotator_b):
    _label_all(campaign, [annotator_a, annotator_b], {"annotator_a": ("x",), "annotator_b": ("x",)})
    body = client_for(lead).get("/api/audits/excluded-items/octo-test/?exclude=flagged_by_both").json()
    assert len(body["items"]) == 3
    assert client_for(lead).get("/api/audits/excluded-items/octo-test/?exclude=nope").status_code == 400


def test_it_computes_ranks_with_ties_sharing_the_mean_rank():
    assert effect.ranks({"a": 50.0, "b": 50.0, "c": 10.0, "d": None}) == {"a": 1.5, "b": 1.5, "c": 3}


def test_the_leaderboard_api_leaves_out_what_an_exclusion_policy_flags(bench, campaign, lead, annotator_a, annotator_b):
    _label_all(campaign, [annotator_a, annotator_b], {"annotator_a": ("x",), "annotator_b": ("x",)})
    api = client_for(lead)
    before = api.get("/api/leaderboards/octo-test/").json()
    after = api.get("/api/leaderboards/octo-test/?exclude=adjudicated_invalid").json()
    assert [r["model"] for r in before["rows"]] == ["beta", "alpha"]
    assert [r["model"] for r in after["rows"]] == ["alpha", "beta"]
    assert after["rows"][0]["isr"] == 100.0 and after["excluded_items"] == 3 and before["excluded_items"] == 0
    assert after["state"]["exclude"] == "adjudicated_invalid"
    assert api.get("/api/leaderboards/octo-test/?exclude=nope").status_code == 400


def test_the_leaderboard_page_offers_the_policies_and_shows_ranks_before_and_after(
    bench, campaign, lead, annotator_a, annotator_b
):
    _label_all(campaign, [annotator_a, annotator_b], {"annotator_a": ("x",), "annotator_b": ("x",)})
    page = client_for(lead)
    plain = page.get("/b/octo-test/leaderboard/").content.decode()
    assert 'name="exclude"' in plain and "final status invalid" in plain and 'id="exclusion"' not in plain

    html = page.get("/b/octo-test/leaderboard/?exclude=adjudicated_invalid").content.decode()
    box = html[html.index('id="exclusion"') : html.index("</div>", html.index("exclusion-stats"))]
    assert "3 checklist items left out" in box
    assert "<dd>-1.000</dd>" in box  # the two models swap: tau = -1
    assert "alpha now above beta" in html
    assert "/audits/effect/octo-test/?exclude=adjudicated_invalid" in html
    table = html[html.index("<tbody>") : html.index("</tbody>")]
    assert table.index(">alpha<") < table.index(">beta<")  # ordered after the exclusion
    alpha = table[table.index(">alpha<") : table.index("</tr>", table.index(">alpha<"))]
    assert "▲ 1" in alpha and ">100.00 <" in alpha  # rank 2 -> 1, ISR 100 after
    beta = table[table.index(">beta<") : table.index("</tr>", table.index(">beta<"))]
    assert "▼ 1" in beta and "▼ -1" not in beta  # a fall reads as how far, the arrow says which way


def test_exports_and_share_snapshots_carry_the_exclusion_policy(bench, campaign, lead, annotator_a, annotator_b):
    from runs.models import ShareLink

    _label_all(campaign, [annotator_a, annotator_b], {"annotator_a": ("x",), "annotator_b": ("x",)})
    page = client_for(lead)
    exported = page.get("/b/octo-test/leaderboard/?exclude=adjudicated_invalid&export=json").json()
    assert exported["state"]["exclude"] == "adjudicated_invalid"
    assert [(r["model"], r["isr"]) for r in exported["rows"]][0] == ("alpha", 100.0)
    plain = page.get("/b/octo-test/leaderboard/?export=json").json()
    assert plain["state"]["exclude"] == "none" and plain["rows"][0]["model"] == "beta"

    assert (
        page.post("/b/octo-test/share/", {"query": "exclude=adjudicated_invalid", "expires_in": ""}).status_code == 200
    )
    snapshot = ShareLink.objects.get().snapshot
    assert snapshot["state"]["exclude"] == "adjudicated_invalid" and snapshot["overall"][0]["model"] == "alpha"
    assert snapshot["exclusion"]["n_excluded"] == 3


def test_the_effect_page_keeps_the_leaderboard_filters_it_was_opened_with(
    bench, campaign, lead, annotator_a, annotator_b
):
    _label_all(campaign, [annotator_a, annotator_b], {"annotator_a": ("x",), "annotator_b": ("x",)})
    page = client_for(lead)
    whole = page.get("/audits/effect/octo-test/?exclude=adjudicated_invalid").content.decode()
    assert "alpha gained on beta" in whole and "Limited to the leaderboard" not in whole
    only_alpha = page.get("/audits/effect/octo-test/?exclude=adjudicated_invalid&run=alpha-r1").content.decode()
    assert "Limited to the leaderboard's filters: runs alpha-r1;" in only_alpha
    assert "gained on" not in only_alpha and ">beta<" not in only_alpha  # one model: nothing to swap with
    assert 'href="?run=alpha-r1&amp;exclude=flagged_by_both"' in only_alpha  # the policy pills keep the filter


def test_only_items_the_gaining_model_failed_more_often_are_behind_a_swap():
    verdicts = {
        "up": {1: {"pass": 1, "fail": 1}, 2: {"pass": 2, "fail": 0}, 3: {"pass": 1, "fail": 0}},
        "down": {1: {"pass": 2, "fail": 0}, 2: {"pass": 0, "fail": 2}, 3: {"pass": 1, "fail": 0}},
    }
    behind = effect._items_behind("up", "down", verdicts, limit=10)
    assert behind == [{"item_id": 1, "pass_rate_up": 0.5, "pass_rate_down": 1.0, "difference": 0.5}]


def test_it_says_where_the_lead_decides_that_decisions_count_only_once_the_campaign_settles(
    bench, campaign, lead, annotator_a, annotator_b
):
    label_all(campaign, [annotator_a], lambda user, unit: values_for(unit))
    label_all(campaign, [annotator_b], lambda user, unit: values_for(unit, bad_keys=()))  # they disagree on every x
    disputed = list(AuditUnit.objects.filter(campaign=campaign, state="disputed"))
    services.unit_adjudicate(disputed[0], lead=lead, final_status="invalid")
    client = client_for(lead)
    effect_url = reverse("audits:effect", args=[bench["benchmark"].slug])
    queue = client.get(reverse("audits:campaign-adjudicate", args=[campaign.pk])).content.decode()
    assert "not counted by the leaderboard's exclusion policies yet" in queue
    assert f"{len(disputed) - 1} units of this one are still being labelled or awaiting adjudication" in queue
    assert f'href="{effect_url}?exclude=adjudicated_invalid&amp;campaigns={campaign.pk}"' in queue
    page = client.get(effect_url).content.decode()
    assert (
        f"Not counted:</strong> pilot ({len(disputed) - 1} units still being labelled or awaiting adjudication)" in page
    )
    assert "neither settled nor ticked below are not counted" in page
    assert 'id="not-counted"' not in client.get(f"{effect_url}?campaigns={campaign.pk}").content.decode()
    for unit in disputed[1:]:
        services.unit_adjudicate(unit, lead=lead, final_status="invalid")
    queue = client.get(reverse("audits:campaign-adjudicate", args=[campaign.pk])).content.decode()
    assert "the leaderboard's exclusion policies count its decisions" in queue
    assert 'id="not-counted"' not in client.get(effect_url).content.decode()


def test_an_unknown_policy_is_said_on_the_leaderboard_and_the_effect_page_in_their_apis_words(bench, campaign, lead):
    client = client_for(lead)
    said = client.get("/api/leaderboards/octo-test/?exclude=nope").json()["exclude"][0]
    assert said == "unknown exclusion policy 'nope'; one of: none, " + ", ".join(exclusion_policies())
    assert set(selectors.POLICIES) <= set(exclusion_policies())
    assert "unknown exclusion policy" not in client.get("/b/octo-test/leaderboard/").content.decode()  # now cached
    page = client.get("/b/octo-test/leaderboard/?exclude=nope").content.decode()
    assert escape(said) in page and 'id="exclusion"' not in page  # said, and every item counted
    assert "unknown exclusion policy" not in client.get("/b/octo-test/leaderboard/?exclude=none").content.decode()
    swap = client.get("/b/octo-test/leaderboard/?by=model", HTTP_HX_REQUEST="true").content.decode()
    assert '<div id="query-notes" hx-swap-oob="true">' in swap and "unknown exclusion policy" not in swap  # cleared

    effect_said = client.get("/api/audits/effect/octo-test/?exclude=nope").json()["exclude"][0]
    assert effect_said == "unknown exclusion policy 'nope'; one of: " + ", ".join(sorted(selectors.POLICIES))
    assert client.get("/api/audits/excluded-items/octo-test/?exclude=nope").json()["exclude"] == [effect_said]
    assert escape(effect_said) in client.get("/audits/effect/octo-test/?exclude=nope").content.decode()
