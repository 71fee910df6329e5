"""From the item health page to an item audit stratified by its flags, settled per flag against the unflagged
control: which signals find bad items."""

import html
import re

import pytest
from django.urls import reverse

from audits import agreement, sampling, selectors, services
from runs.models import Benchmark
from tests.runs.test_item_health import _study

from .conftest import BAD, OK, client_for, label_all

pytestmark = pytest.mark.django_db


def test_a_campaign_stratified_by_health_flags_says_per_flag_how_many_items_annotators_confirmed(
    lead, annotator_a, annotator_b
):
    _study(models=6)
    bench = Benchmark.objects.get(slug="octo")
    page = client_for(lead).get(reverse("api:item-health", args=["octo"])).json()
    flags = {(i["instance"], i["key"]): (i["flags"][0] if i["flags"] else selectors.UNFLAGGED) for i in page["items"]}
    assert set(flags.values()) == {"ceiling", "judge-split", selectors.UNFLAGGED}
    health_page = client_for(lead).get(reverse("runs:checklist-item-health", args=["octo"])).content.decode()
    link = html.unescape(re.search(r'href="([^"]*)">Audit these</a>', health_page).group(1))
    proposed = client_for(lead).get(link).content.decode()
    assert re.search(r'value="health"[^>]*checked', proposed) and re.search(
        r'value="checklist_items"[^>]*selected', proposed
    )
    campaign = services.campaign_create(
        name="where the doubt is",
        subject="checklist_items",
        benchmarks=[bench],
        strata=["health"],
        allocation="proportional",
        size=6,
        seed=3,
        user=lead,
    )
    assert "health" in sampling.STRATA
    services.campaign_start(campaign)
    assert {u.stratum for u in campaign.units.all()} == set(flags.values())

    def says(user, unit):  # annotators find the items the judges split on ambiguous, and nothing else
        return BAD if unit.stratum == "judge-split" else OK

    label_all(campaign, [annotator_a, annotator_b], says)
    rates = {r.stratum: r for r in agreement.campaign_agreement(campaign).rates}
    assert (rates["judge-split"].decided, rates["judge-split"].valid) == (1, 0)
    assert (rates["ceiling"].decided, rates["ceiling"].valid) == (3, 3)
    assert (rates[selectors.UNFLAGGED].decided, rates[selectors.UNFLAGGED].valid) == (2, 2)
    blind_page = client_for(annotator_a).get(reverse("runs:checklist-item-health", args=["octo"]))
    assert blind_page.status_code == 403  # a blind annotator sees no health figure
    # the settled label comes back to the health page as the annotators' flag
    after = client_for(lead).get(reverse("api:item-health", args=["octo"]) + "?flag=annotators").json()
    assert [(i["instance"], i["key"]) for i in after["items"]] == [("task-0", "c1")]
