"""A queue people can work through: assigned annotators, "x of y done", skip, release,
correcting the last label until the unit settles, reserving by POST only, an adjudication page with what the
annotators saw, no import for annotators and no labelling controls for reviewers."""

from datetime import timedelta

import pytest
from django.utils import timezone

from audits import selectors, services
from audits.models import Assignment, AuditUnit, Label, Skip, UnitState

from .conftest import BAD, OK, _user, client_for, label_all, label_next

pytestmark = pytest.mark.django_db


def test_only_the_assigned_annotators_receive_units(campaign, lead, annotator_a, annotator_b, annotator_c):
    held = services.assignment_next(campaign, annotator_c)
    response = client_for(lead).post(
        f"/api/audits/campaigns/{campaign.pk}/annotators/",
        {"annotators": ["annotator_a", "annotator_b"]},
        content_type="application/json",
    )
    assert response.status_code == 200 and response.json()["annotators"] == ["annotator_a", "annotator_b"]
    assert not Assignment.objects.filter(pk=held.pk).exists()  # c's reservation went back
    assert services.assignment_next(campaign, annotator_c) is None
    assert client_for(annotator_c).post(f"/api/audits/campaigns/{campaign.pk}/next/").status_code == 204
    page = client_for(annotator_c).post(f"/audits/{campaign.pk}/label/", follow=True).content.decode()
    assert "You are not assigned to this campaign" in page
    assert services.assignment_next(campaign, annotator_a) is not None
    # the page form does the same; nobody ticked opens the campaign to every annotator again
    client_for(lead).post(f"/audits/{campaign.pk}/annotators/", {"annotators": []})
    assert services.assignment_next(campaign, annotator_c) is not None
    refused = client_for(lead).post(
        f"/api/audits/campaigns/{campaign.pk}/annotators/", {"annotators": ["nobody"]}, content_type="application/json"
    )
    assert refused.status_code == 400


def test_a_campaign_created_for_three_annotators_serves_only_them(
    bench, lead, annotator_a, annotator_b, annotator_c, django_user_model
):
    outsider = _user(django_user_model, "annotator_d", "annotator")
    c = services.campaign_start(
        services.campaign_create(
            name="three",
            subject="checklist_items",
            benchmarks=[bench["benchmark"]],
            strata=[],
            allocation="proportional",
            size=9,
            seed=2,
            annotators_per_unit=3,
            annotators=[annotator_a, annotator_b, annotator_c],
            user=lead,
        )
    )
    assert services.assignment_next(c, outsider) is None
    for user in (annotator_a, annotator_b, annotator_c):
        while (a := services.assignment_next(c, user)) is not None:
            services.label_submit(a, OK)
    assert c.units.filter(state=UnitState.CLOSED).count() == 9


def test_an_annotator_sees_x_of_y_done(campaign, annotator_a, annotator_b, annotator_c):
    assert selectors.queue_progress(campaign, annotator_a) == {"done": 0, "total": 9}
    for _ in range(3):
        label_next(campaign, annotator_a, OK)
    page = client_for(annotator_a).get(f"/audits/{campaign.pk}/label/").content.decode()
    assert "3 of 9 done" in page
    assert client_for(annotator_a).get(f"/api/audits/campaigns/{campaign.pk}/").json()["queue"] == {
        "done": 3,
        "total": 9,
    }
    for _ in range(9):
        if services.assignment_next(campaign, annotator_b) is None:
            break
        label_next(campaign, annotator_b, OK)
    # b filled the three units a labelled and six others: c may still take the six a has not labelled
    assert selectors.queue_progress(campaign, annotator_c) == {"done": 0, "total": 6}
    assert "Your queue: 0 of 6 done" in client_for(annotator_c).get(f"/audits/{campaign.pk}/").content.decode()


def test_the_campaign_page_offers_labelling_only_while_the_queue_has_units(campaign, annotator_a):
    """Found walking the demo as an annotator: "Start labelling" beside "Your queue: 60 of 60 done" led to a page
    with nothing to label. It reads "Go on labelling" once started, and "Your labels" once the queue is done."""
    detail = f"/audits/{campaign.pk}/"
    assert "Start labelling" in client_for(annotator_a).get(detail).content.decode()
    label_next(campaign, annotator_a, OK)
    assert "Go on labelling" in client_for(annotator_a).get(detail).content.decode()
    label_all(campaign, [annotator_a], lambda user, unit: OK)
    page = client_for(annotator_a).get(detail).content.decode()
    assert "Your queue: 9 of 9 done" in page
    assert "labelling</a>" not in page and 'href="/audits/mine/">Your labels</a>' in page


def test_skip_puts_the_unit_back_and_it_comes_last(campaign, annotator_a, annotator_b):
    client = client_for(annotator_a)
    client.post(f"/audits/{campaign.pk}/label/")
    first = Assignment.objects.get(annotator=annotator_a)
    fragment = client.post(f"/audits/assignments/{first.pk}/skip/", {"fragment": "1"}).content.decode()
    second = Assignment.objects.get(annotator=annotator_a)
    assert second.unit_id != first.unit_id and f'data-assignment="{second.pk}"' in fragment
    assert Skip.objects.filter(unit_id=first.unit_id, annotator=annotator_a).exists()
    # the skipped unit is free for the others at once
    assert services.assignment_next(campaign, annotator_b).unit_id == first.unit_id
    # and comes back to a after every other unit
    order = []
    services.label_submit(second, OK)
    order.append(second.unit.position)
    while (a := services.assignment_next(campaign, annotator_a)) is not None:
        order.append(a.unit.position)
        services.label_submit(a, OK)
    assert order[-1] == first.unit.position and len(order) == 9


def test_release_frees_a_held_unit_but_not_a_labelled_one(campaign, annotator_a):
    held = services.assignment_next(campaign, annotator_a)
    response = client_for(annotator_a).post(f"/audits/assignments/{held.pk}/release/", follow=True)
    assert "Put back" in response.content.decode() and "Take the next unit" in response.content.decode()
    assert not Assignment.objects.filter(annotator=annotator_a).exists()
    labelled = label_next(campaign, annotator_a, OK)
    refused = client_for(annotator_a).post(f"/api/audits/assignments/{labelled.pk}/release/")
    assert refused.status_code == 409 and "correct it" in refused.json()["detail"]
    assert Label.objects.filter(assignment=labelled).exists()


def test_an_annotator_corrects_the_last_label_until_the_unit_settles(campaign, annotator_a, annotator_b):
    client = client_for(annotator_a)
    mine = label_next(campaign, annotator_a, OK)
    page = client.get(f"/audits/{campaign.pk}/label/").content.decode()
    assert f'href="/audits/assignments/{mine.pk}/correct/"' in page
    form = client.get(f"/audits/assignments/{mine.pk}/correct/").content.decode()
    assert 'name="correct" value="1"' in form and 'value="ok" id="id_overall_0" required checked' in form
    client.post(f"/audits/assignments/{mine.pk}/label/", {**BAD, "note": "second thoughts", "correct": "1"})
    label = Label.objects.get(assignment=mine)
    assert label.values == BAD and label.note == "second thoughts" and not label.valid
    theirs = services.assignment_next(campaign, annotator_b)
    assert theirs.unit_id == mine.unit_id
    services.label_submit(theirs, BAD)  # the unit settles (closed: both say BAD)
    assert AuditUnit.objects.get(pk=mine.unit_id).state == UnitState.CLOSED
    response = client.post(
        f"/audits/assignments/{mine.pk}/label/", {**OK, "correct": "1"}, HTTP_ACCEPT="application/json"
    )
    assert response.status_code == 400 and "can no longer change" in response.json()["error"]
    assert Label.objects.get(assignment=mine).values == BAD
    assert "can no longer change" in client.get(f"/audits/assignments/{mine.pk}/correct/", follow=True).content.decode()
    assert f"/audits/assignments/{mine.pk}/correct/" not in client.get(f"/audits/{campaign.pk}/label/").content.decode()
    late = client.post(f"/api/audits/assignments/{mine.pk}/label/", {"values": OK}, content_type="application/json")
    assert late.status_code == 409 and "can no longer change" in late.json()["detail"]


def test_the_api_corrects_a_label_while_the_unit_is_open(campaign, annotator_a):
    client = client_for(annotator_a)
    mine = services.assignment_next(campaign, annotator_a)
    for values in (OK, BAD):
        response = client.post(
            f"/api/audits/assignments/{mine.pk}/label/",
            {"values": values, "note": "n"},
            content_type="application/json",
        )
        assert response.status_code == 200 and response.json()["values"] == values
    assert Label.objects.get(assignment=mine).values == BAD and Label.objects.filter(assignment=mine).count() == 1


def test_reservations_expire(campaign, annotator_a, annotator_b):
    held = services.assignment_next(campaign, annotator_a)
    later = timezone.now() + timedelta(minutes=campaign.reservation_minutes + 1)
    taken = services.assignment_next(campaign, annotator_b, now=later)
    assert not Assignment.objects.filter(pk=held.pk).exists()
    assert taken.unit_id == held.unit_id and taken.slot == 1


def test_adjudication_shows_what_the_annotators_saw_and_leads_to_the_next_dispute(
    campaign, lead, annotator_a, annotator_b
):
    for _ in range(9):
        a = services.assignment_next(campaign, annotator_a)
        services.label_submit(a, OK, note="reads fine to me")
        b = services.assignment_next(campaign, annotator_b)
        services.label_submit(b, BAD if a.unit.key.endswith("/x") else OK, note="too vague to decide")
    disputed = selectors.adjudication_queue(campaign)
    assert len(disputed) == 3
    client = client_for(lead)
    page = client.get(f"/audits/units/{disputed[0].pk}/adjudicate/").content.decode()
    assert "Be terse." in page and "Task " in page  # the instance's system prompt and user query
    assert "Check the assistant uses tabs for indentation" in page  # a sibling item
    assert "reads fine to me" in page and "too vague to decide" in page  # both labels with their notes
    assert "adjudicating.js" in page and "<kbd>v</kbd> valid" in page
    assert f'id="next-disputed" href="/audits/units/{disputed[1].pk}/adjudicate/"' in page
    response = client.post(f"/audits/units/{disputed[0].pk}/adjudicate/", {"final_status": "invalid"})
    assert response["Location"] == f"/audits/units/{disputed[1].pk}/adjudicate/"
    client.post(f"/audits/units/{disputed[1].pk}/adjudicate/", {"final_status": "invalid"})
    last = client.post(f"/audits/units/{disputed[2].pk}/adjudicate/", {"final_status": "invalid"})
    assert last["Location"] == f"/audits/{campaign.pk}/adjudicate/"


def test_annotators_cannot_import(campaign, annotator_a, lead):
    annotator = client_for(annotator_a)
    assert annotator.get("/import/").status_code == 403
    assert annotator.post("/api/ingest/", {"format": "native"}).status_code == 403
    assert 'href="/import/"' not in annotator.get("/").content.decode()
    assert 'href="/import/"' in client_for(lead).get("/").content.decode()


def test_a_reviewer_sees_no_labelling_controls(campaign, django_user_model):
    reviewer = _user(django_user_model, "rev", "reviewer")
    page = client_for(reviewer).get(f"/audits/{campaign.pk}/").content.decode()
    assert "Start labelling" not in page and f'href="/audits/{campaign.pk}/label/"' not in page
    assert "Where the units stand" in page and "labels/?format=csv" in page
    assert client_for(reviewer).post(f"/audits/{campaign.pk}/label/").status_code == 403
