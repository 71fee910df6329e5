"""An annotator never sees another annotator's label, identity or the judges' verdicts before the unit closes."""

from audits import services
from audits.models import AuditUnit

from .conftest import BAD, OK, client_for, label_next


def _split(campaign, a_user, b_user):
    a = label_next(campaign, a_user, OK)
    b = services.assignment_next(campaign, b_user)
    assert b.unit_id == a.unit_id
    services.label_submit(b, BAD, note="SECRET-NOTE-B")
    return a, b


def test_it_hides_the_other_label_from_an_annotator_on_the_unit_page_and_api(campaign, annotator_a, annotator_b):
    a, b = _split(campaign, annotator_a, annotator_b)
    client = client_for(annotator_a)
    page = client.get(f"/audits/units/{a.unit_id}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "SECRET-NOTE-B" not in html and "annotator_b" not in html and "ambiguous" not in html
    assert "Judges" not in html
    body = client.get(f"/api/audits/units/{a.unit_id}/").json()
    assert len(body["labels"]) == 1 and body["labels"][0]["mine"] is True
    assert "annotator" not in body["labels"][0] and "slot" not in body["labels"][0]


def test_it_refuses_another_annotators_assignment_by_page_and_api(campaign, annotator_a, annotator_b):
    a, b = _split(campaign, annotator_a, annotator_b)
    client = client_for(annotator_a)
    assert client.get(f"/api/audits/assignments/{b.pk}/").status_code == 404
    assert (
        client.post(
            f"/api/audits/assignments/{b.pk}/label/", {"values": OK}, content_type="application/json"
        ).status_code
        == 404
    )
    assert client.post(f"/audits/assignments/{b.pk}/label/", OK).status_code == 404


def test_it_hides_disagreements_agreement_and_adjudication_from_annotators(campaign, annotator_a, annotator_b):
    a, _ = _split(campaign, annotator_a, annotator_b)
    client = client_for(annotator_a)
    assert client.get(f"/api/audits/campaigns/{campaign.pk}/disagreements/").status_code == 403
    assert client.get(f"/api/audits/campaigns/{campaign.pk}/agreement/").status_code == 403
    assert client.get(f"/audits/{campaign.pk}/adjudicate/").status_code == 403
    assert client.get(f"/audits/units/{a.unit_id}/adjudicate/").status_code == 403
    assert client.get(f"/audits/{campaign.pk}/agreement/").status_code == 403


def test_it_keeps_the_labelling_screen_free_of_verdicts_and_other_labels(campaign, annotator_a, annotator_b):
    label_next(campaign, annotator_a, BAD)
    html = client_for(annotator_b).post(f"/audits/{campaign.pk}/label/", follow=True).content.decode()
    assert (
        "judge-1" not in html
        and "badge-fail" not in html
        and "badge-pass" not in html
        and "verdict" not in html.lower()
    )
    assert "ambiguous" in html  # the rubric's own choice is there, but no label of annotator_a is checked
    assert "checked" not in html


def test_it_reveals_the_other_label_anonymously_once_the_unit_is_closed(campaign, lead, annotator_a, annotator_b):
    a, _ = _split(campaign, annotator_a, annotator_b)
    services.unit_adjudicate(AuditUnit.objects.get(pk=a.unit_id), lead=lead, final_status="invalid")
    body = client_for(annotator_a).get(f"/api/audits/units/{a.unit_id}/").json()
    assert len(body["labels"]) == 2 and body["final_status"] == "invalid"
    assert all("annotator" not in lab for lab in body["labels"])
    html = client_for(annotator_a).get(f"/audits/units/{a.unit_id}/").content.decode()
    assert "Another annotator" in html and "annotator_b" not in html


def test_it_shows_a_lead_both_labels_with_names(campaign, lead, annotator_a, annotator_b):
    a, _ = _split(campaign, annotator_a, annotator_b)
    body = client_for(lead).get(f"/api/audits/units/{a.unit_id}/").json()
    assert sorted(lab["annotator"] for lab in body["labels"]) == ["annotator_a", "annotator_b"]


def test_it_hides_units_an_annotator_was_not_assigned(campaign, annotator_a, annotator_b, outsider):
    a, _ = _split(campaign, annotator_a, annotator_b)
    other = AuditUnit.objects.exclude(pk=a.unit_id).first()
    assert client_for(annotator_a).get(f"/api/audits/units/{other.pk}/").status_code == 404
    assert client_for(outsider).get(f"/api/audits/units/{a.unit_id}/").status_code == 404
    assert client_for(outsider).get(f"/audits/{campaign.pk}/").status_code == 404


def test_a_blind_annotator_reads_results_only_in_aggregate(campaign, bench, annotator_a):
    from django.contrib.auth.models import Group

    from runs.models import Attempt

    attempt = Attempt.objects.filter(run__benchmark=bench["benchmark"]).first()
    client = client_for(annotator_a)
    assert client.get("/b/octo-test/leaderboard/").status_code == 200  # aggregates stay open
    for url in (
        f"/attempts/{attempt.pk}/",
        f"/instances/{attempt.instance_id}/",
        "/b/octo-test/attempts/?model=alpha",
        "/b/octo-test/judges/",
        f"/api/attempts/{attempt.pk}/verdicts/",
        "/api/verdicts/",
    ):
        response = client.get(url)
        assert response.status_code == 403, url
        assert "Annotators label blind" in response.content.decode(), url
    assert client.post("/b/octo-test/share/", {"query": "", "expires_in": ""}).status_code == 403

    annotator_a.groups.add(Group.objects.get_or_create(name="reviewer")[0])  # a reviewer who also annotates
    assert client.get(f"/attempts/{attempt.pk}/").status_code == 200
    assert client.get(f"/api/attempts/{attempt.pk}/verdicts/").status_code == 200


def test_a_blind_annotator_is_shown_no_control_that_would_refuse_them(
    campaign, bench, annotator_a, django_capture_on_commit_callbacks
):
    from django.contrib.auth.models import Group

    reviewer = annotator_a.__class__.objects.create_user("reviewer_r", password="pw-reviewer-r-1")
    reviewer.groups.add(Group.objects.get_or_create(name="reviewer")[0], Group.objects.get_or_create(name="editor")[0])
    refused = (
        "/b/octo-test/judges/",
        "/b/octo-test/compare/",
        "/b/octo-test/attempts/?",
        "/b/octo-test/share-page/",
        'name="exclude"',
    )
    with django_capture_on_commit_callbacks(
        execute=True
    ):  # the reviewer's (and editor's: Share) fragments are cached first
        seen = client_for(reviewer).get("/b/octo-test/leaderboard/").content.decode()
    blind = client_for(annotator_a).get("/b/octo-test/leaderboard/").content.decode()
    assert [c for c in refused if c not in seen] == []
    assert [c for c in refused if c in blind] == []  # the cached fragments are keyed by blindness


def test_a_conditional_items_examples_say_nothing_of_the_judges_applicability_verdicts(campaign):
    """The labelling screen shows responses to the task for a conditional item, chosen without verdicts."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from audits.selectors import unit_evidence

    unit = AuditUnit.objects.filter(campaign=campaign, item__isnull=False).select_related("item", "instance").first()
    unit.item.conditional = True
    unit.item.save(update_fields=["conditional"])
    with CaptureQueriesContext(connection) as queries:
        evidence = unit_evidence(unit)
    assert not any("runs_verdict" in q["sql"] for q in queries.captured_queries)
    assert all(e["label"].startswith("Response ") for e in evidence["examples"])
