"""The draft allocates by largest remainder, shows expected and sampled counts, warns
about strata without a unit, and offers Neyman allocation from a pilot's standard deviations."""

import math
from fractions import Fraction

import pytest
from django.db.models import Count

from audits import sampling, selectors, services
from audits.forms import CampaignForm, parse_stratum_sd
from audits.models import Campaign
from runs.demo import demo_load
from runs.models import Benchmark

from .conftest import client_for

pytestmark = pytest.mark.django_db
STRATA = ["category", "check_type"]


def hamilton(counts: dict[str, int], size: int) -> dict[str, int]:
    """Textbook largest remainder (Hamilton) in exact arithmetic: floors of size * N_s / N, then one more
    unit to each of the largest remainders (ties: larger stratum, then name)."""
    total = sum(counts.values())
    exact = {s: Fraction(size * n, total) for s, n in counts.items()}
    out = {s: math.floor(q) for s, q in exact.items()}
    rest = sorted(counts, key=lambda s: (-(exact[s] - out[s]), -counts[s], s))
    for s in rest[: size - sum(out.values())]:
        out[s] += 1
    return out


@pytest.fixture
def octobench_draft(lead):
    demo_load(seed=1, scale="default")
    octobench = Benchmark.objects.get(slug="octobench")
    return services.campaign_create(
        name="draft",
        subject="checklist_items",
        benchmarks=[octobench],
        strata=STRATA,
        allocation="proportional",
        size=12,
        seed=7,
        user=lead,
    )


def test_the_draft_allocates_by_largest_remainder_for_every_size_up_to_200(octobench_draft, lead):
    cands = selectors.candidates("checklist_items", octobench_draft.benchmarks.values_list("id", flat=True))
    counts = sampling.population(cands, STRATA)
    assert len(counts) == 25 and counts["System Prompt / compliance"] == 239 and len(cands) == 1003
    for size in range(1, 201):
        octobench_draft.size = size
        draft = selectors.draft_allocation(octobench_draft, cands)
        assert draft["allocation"] == hamilton(counts, size), size
        assert draft["n_sampled"] == size
        for row in draft["rows"]:
            assert abs(row["allocated"] - row["expected"]) < 1, (size, row)
    # the figures: 23.8% of the population gets 3 of 12 (it got 7) and 24 of 100 (it got 32)
    assert hamilton(counts, 12)["System Prompt / compliance"] == 3
    assert hamilton(counts, 100)["System Prompt / compliance"] == 24
    # the frozen sample follows the same allocation, and the same seed draws the same sample
    octobench_draft.size = 12
    octobench_draft.save()
    drawn = services.campaign_sample(octobench_draft)
    assert {s: sum(1 for t, _ in drawn if t == s) for s in counts} == hamilton(counts, 12)
    assert [c.key for _, c in services.campaign_sample(octobench_draft)] == [c.key for _, c in drawn]


def test_the_draft_page_shows_expected_and_sampled_counts_and_warns_about_empty_strata(octobench_draft, lead):
    page = client_for(lead).get(f"/audits/{octobench_draft.pk}/").content.decode()
    assert '<th class="num">Expected</th><th class="num">Sampled</th>' in page
    # System Prompt / compliance: 12 * 239 / 1003 = 2.86 expected, 3 sampled
    assert (
        '<td>System Prompt / compliance</td><td class="num">239</td><td class="num">23.83</td><td class="num">2.86</td><td class="num">3</td>'
        in page
    )
    empty = [
        s
        for s, k in hamilton(
            sampling.population(
                selectors.candidates("checklist_items", octobench_draft.benchmarks.values_list("id", flat=True)), STRATA
            ),
            12,
        ).items()
        if not k
    ]
    assert len(empty) == 16
    assert "16 of 25 strata get no unit" in page and "Memory / configuration" in page


def test_neyman_allocates_in_proportion_to_size_times_standard_deviation():
    counts = {"a": 100, "b": 100, "c": 50}
    # N_s * S_s = 10, 40, 10 -> 1/6, 4/6, 1/6 of 12
    assert sampling.allocate(counts, 12, mode="neyman", sd={"a": 0.1, "b": 0.4, "c": 0.2}) == {"a": 2, "b": 8, "c": 2}
    # a stratum without a figure counts with the largest standard deviation a rate can have (0.5)
    assert sampling.quotas(counts, 10, mode="neyman", sd={"a": 0.5, "b": 0.5}) == pytest.approx(
        {"a": 4, "b": 4, "c": 2}
    )
    # never more than a stratum has: what "b" cannot take goes to the others in proportion
    assert sampling.allocate({"a": 100, "b": 3}, 20, mode="neyman", sd={"a": 0.01, "b": 0.5}) == {"a": 17, "b": 3}
    # no spread anywhere: proportional
    assert sampling.allocate(counts, 10, mode="neyman", sd={"a": 0, "b": 0, "c": 0}) == {"a": 4, "b": 4, "c": 2}


def test_neyman_reads_standard_deviations_from_a_pilot_campaign(campaign, lead, annotator_a, annotator_b):
    from .conftest import label_all, values_for

    label_all(campaign, [annotator_a, annotator_b], lambda user, unit: values_for(unit))
    # pilot, strata by category: "User Query" (x items) all invalid 0/3, "System Prompt" all valid 6/6
    sd = {"User Query": math.sqrt(0.2 * 0.8), "System Prompt": math.sqrt(7 / 8 * 1 / 8)}
    main = services.campaign_create(
        name="main",
        subject="checklist_items",
        benchmarks=list(campaign.benchmarks.all()),
        strata=["category"],
        allocation="neyman",
        size=4,
        seed=1,
        sd_from=campaign,
        stratum_sd={"System Prompt": "0.1"},
        user=lead,
    )
    assert main.stratum_sd == {"User Query": pytest.approx(sd["User Query"], abs=1e-4), "System Prompt": 0.1}
    draft = selectors.draft_allocation(main)
    # 3 * 0.4 = 1.2 against 6 * 0.1 = 0.6: two thirds of 4 to User Query
    assert draft["allocation"] == {"System Prompt": 1, "User Query": 3}
    assert [r["expected"] for r in draft["rows"]] == pytest.approx([4 / 3, 8 / 3])
    page = client_for(lead).get(f"/audits/{main.pk}/").content.decode()
    assert '<th class="num">SD</th>' in page and '<td class="num">0.1</td>' in page


def test_the_form_reads_standard_deviations_and_variances_and_refuses_bad_lines(bench, annotator_a):
    assert parse_stratum_sd("System Prompt / compliance = 0.3\n\nUser Query=var 0.09") == {
        "System Prompt / compliance": 0.3,
        "User Query": pytest.approx(0.3),
    }
    with pytest.raises(Exception, match="line 2"):
        parse_stratum_sd("a = 0.1\nb = lots")
    form = CampaignForm(
        {
            "name": "n",
            "subject": "checklist_items",
            "benchmarks": [bench["benchmark"].pk],
            "allocation": "neyman",
            "size": 5,
            "seed": 1,
            "annotators_per_unit": 2,
            "reservation_minutes": 30,
            "stratum_sd": "x = -1",
            "annotators": [annotator_a.pk],
        }
    )
    assert not form.is_valid() and "line 1" in str(form.errors["stratum_sd"])


def test_a_lead_creates_a_neyman_pilot_campaign_for_chosen_annotators_through_the_api(bench, lead, annotator_a):
    response = client_for(lead).post(
        "/api/audits/campaigns/",
        {
            "name": "api",
            "subject": "checklist_items",
            "benchmarks": ["octo-test"],
            "strata": ["category"],
            "allocation": "neyman",
            "size": 3,
            "stratum_sd": {"User Query": 0.5, "System Prompt": 0.1},
            "annotators": ["annotator_a"],
            "pilot": True,
        },
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["pilot"] is True and body["annotators"] == ["annotator_a"]
    assert body["stratum_sd"] == {"User Query": 0.5, "System Prompt": 0.1}
    c = Campaign.objects.get(pk=body["id"])
    # 3 * 0.5 = 1.5 vs 6 * 0.1 = 0.6: 3 * 1.5 / 2.1 = 2.14 -> 2, 0.86 -> 1
    assert dict(c.units.values_list("stratum").annotate(n=Count("id")).order_by()) == {
        "User Query": 2,
        "System Prompt": 1,
    }
