from django.contrib.auth.models import Group
from django.db import connection
from django.test.utils import CaptureQueriesContext

from audits import services
from audits.models import Assignment, Campaign, Label

from .conftest import BAD, OK, client_for, label_all, label_next


def test_it_sends_anonymous_visitors_to_the_login_page(campaign, client):
    for url in ("/audits/", f"/audits/{campaign.pk}/", f"/audits/{campaign.pk}/label/", "/audits/effect/octo-test/"):
        response = client.get(url)
        assert response.status_code == 302 and "/login/" in response["Location"]


def test_it_lets_a_lead_create_preview_and_start_a_campaign(bench, lead):
    client = client_for(lead)
    response = client.post(
        "/audits/new/",
        {
            "name": "round 1",
            "subject": "checklist_items",
            "benchmarks": [bench["benchmark"].pk],
            "strata": ["category"],
            "allocation": "equal",
            "minimum_per_stratum": "",
            "size": "4",
            "seed": "9",
            "annotators_per_unit": "2",
            "reservation_minutes": "30",
        },
    )
    campaign = Campaign.objects.get(name="round 1")
    assert response.status_code == 302 and campaign.state == "draft"
    html = client.get(f"/audits/{campaign.pk}/").content.decode()
    assert "Sample preview" in html and "System Prompt" in html and "Near-duplicates" in html
    assert client.post(f"/audits/{campaign.pk}/start/").status_code == 302
    campaign.refresh_from_db()
    assert campaign.state == "started" and campaign.units.count() == 4


def test_it_refuses_a_benchmark_of_the_wrong_kind_for_the_subject(bench, lead):
    response = client_for(lead).post(
        "/audits/new/",
        {
            "name": "x",
            "subject": "dialogue_queries",
            "benchmarks": [bench["benchmark"].pk],
            "allocation": "equal",
            "size": "4",
            "seed": "1",
            "annotators_per_unit": "2",
            "reservation_minutes": "30",
        },
    )
    assert response.status_code == 200 and "nothing to audit" in response.content.decode()


def test_it_refuses_campaign_creation_to_annotators(bench, annotator_a):
    assert client_for(annotator_a).get("/audits/new/").status_code == 403


def test_it_reserves_by_post_only_one_unit_at_a_time(campaign, annotator_a):
    client = client_for(annotator_a)
    url = f"/audits/{campaign.pk}/label/"
    # looking never reserves, however often (the old preload URL included)
    for _ in range(3):
        html = client.get(url).content.decode()
        client.get(f"{url}?fragment=1&skip=1")
    assert "Take the next unit" in html and 'data-assignment="' not in html
    assert not Assignment.objects.filter(annotator=annotator_a).exists()
    page = client.post(url, follow=True)
    html = page.content.decode()
    assert 'data-assignment="' in html and "labelling.js" in html and "<kbd>1</kbd>" in html
    current = Assignment.objects.get(annotator=annotator_a)
    # a second reservation request keeps the held unit; the fragment answers only the unit
    fragment = client.post(url, {"fragment": "1"}).content.decode()
    assert "<html" not in fragment and f'data-assignment="{current.pk}"' in fragment
    assert Assignment.objects.filter(annotator=annotator_a).count() == 1


def test_it_saves_a_label_from_the_screen_as_json_and_once(campaign, annotator_a):
    client = client_for(annotator_a)
    client.post(f"/audits/{campaign.pk}/label/")
    a = Assignment.objects.get(annotator=annotator_a)
    for _ in range(2):
        response = client.post(
            f"/audits/assignments/{a.pk}/label/", {**OK, "note": "fine"}, HTTP_ACCEPT="application/json"
        )
        assert response.json() == {"saved": True, "error": None}
    assert Label.objects.filter(assignment=a).count() == 1
    bad = client.post(f"/audits/assignments/{a.pk}/label/", {"decidable": "yes"}, HTTP_ACCEPT="application/json")
    assert bad.status_code == 400 and not bad.json()["saved"]


def test_it_says_when_nothing_is_left_to_label(campaign, annotator_a, annotator_b, annotator_c):
    for _ in range(9):
        label_next(campaign, annotator_a, OK)
        label_next(campaign, annotator_b, OK)
    html = client_for(annotator_c).get(f"/audits/{campaign.pk}/label/").content.decode()
    assert "Nothing left for you" in html


def test_it_shows_the_queue_adjudication_form_and_agreement_to_a_lead(campaign, lead, annotator_a, annotator_b):
    a = label_next(campaign, annotator_a, OK)
    label_next(campaign, annotator_b, BAD)
    client = client_for(lead)
    queue = client.get(f"/audits/{campaign.pk}/adjudicate/").content.decode()
    assert "Adjudicate" in queue and "50.00" in queue  # 2 of 4 criteria agreed
    assert 'href="/help/metrics/#audits"' in queue  # what agreement means
    form = client.get(f"/audits/units/{a.unit_id}/adjudicate/").content.decode()
    assert "Annotator 1" in form and "Annotator 2" in form and "annotator_a" not in form
    response = client.post(
        f"/audits/units/{a.unit_id}/adjudicate/",
        {"final_status": "invalid", "reason": "ambiguous", "upheld": "1", "note": ""},
    )
    assert response.status_code == 302
    agreement = client.get(f"/audits/{campaign.pk}/agreement/").content.decode()
    assert "Cohen" in agreement and "Wilson" in agreement and 'href="/help/metrics/#audits"' in agreement
    mine = client_for(annotator_a).get("/audits/mine/").content.decode()
    assert "overruled" in mine


def test_the_audit_tabs_are_the_ones_each_role_may_open(campaign, lead, django_user_model):
    """A reviewer was shown the Adjudication tab, which answers 403 to anyone but a lead, and a lead on the agreement
    page was not shown it."""
    reviewer = django_user_model.objects.create_user("audit-reviewer", password="pw-audit-reviewer-1")
    reviewer.groups.add(Group.objects.get_or_create(name="reviewer")[0])
    adjudication, agreement = f"/audits/{campaign.pk}/adjudicate/", f"/audits/{campaign.pk}/agreement/"
    for page in (f"/audits/{campaign.pk}/", agreement):
        html = client_for(reviewer).get(page).content.decode()
        assert f'href="{agreement}"' in html and f'href="{adjudication}"' not in html, page
        html = client_for(lead).get(page).content.decode()
        assert f'href="{agreement}"' in html and f'href="{adjudication}"' in html, page
    assert client_for(reviewer).get(adjudication).status_code == 403


def test_it_lists_campaigns_in_a_fixed_number_of_queries(campaign, lead, django_assert_max_num_queries):
    client = client_for(lead)
    with django_assert_max_num_queries(19):
        assert client.get("/audits/").status_code == 200


def _sign_in(client, user, **query):
    return client.post(
        "/login/" + (f"?next={query['next']}" if query else ""),
        {"username": user.username, "password": f"pw-{user.username}-1"},
    )


def test_it_lands_a_blind_annotator_on_the_labelling_screen_of_their_one_campaign(campaign, annotator_a, client):
    response = _sign_in(client, annotator_a)
    assert response.status_code == 302 and response["Location"] == f"/audits/{campaign.pk}/label/"
    assert "Take the next unit" in client.get(response["Location"]).content.decode()


def test_it_lands_a_blind_annotator_with_several_campaigns_on_their_queue(campaign, bench, lead, annotator_a, client):
    second = services.campaign_start(
        services.campaign_create(
            name="second round",
            subject="checklist_items",
            benchmarks=[bench["benchmark"]],
            strata=["category"],
            allocation="proportional",
            size=3,
            seed=2,
            user=lead,
        )
    )
    finished = services.campaign_start(
        services.campaign_create(
            name="not for her",
            subject="checklist_items",
            benchmarks=[bench["benchmark"]],
            strata=["category"],
            allocation="proportional",
            size=3,
            seed=2,
            user=lead,
            annotators=[lead],
        )
    )
    response = _sign_in(client, annotator_a)
    assert response.status_code == 302 and response["Location"] == "/audits/mine/"
    html = client.get("/audits/mine/").content.decode()
    assert f'href="/audits/{campaign.pk}/label/"' in html and f'href="/audits/{second.pk}/label/"' in html
    assert "0 of 9" in html and "0 of 3" in html and finished.name not in html


def test_it_sends_an_annotator_where_the_sign_in_link_said(campaign, annotator_a, client):
    response = _sign_in(client, annotator_a, next="/audits/")
    assert response["Location"] == "/audits/"


def test_it_lands_leads_and_reviewing_annotators_on_the_results(campaign, lead, annotator_b, client):
    annotator_b.groups.add(Group.objects.get_or_create(name="reviewer")[0])
    for user in (lead, annotator_b):
        client.logout()
        assert _sign_in(client, user)["Location"] == "/"


def test_it_polls_a_campaigns_counts_until_every_unit_is_decided(campaign, lead, annotator_a, annotator_b):
    client = client_for(lead)
    url = f"/audits/{campaign.pk}/"
    assert 'hx-trigger="every ' in client.get(url).content.decode()
    label_next(campaign, annotator_a, OK)
    fragment = client.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert fragment.lstrip().startswith('<div id="campaign-live"') and "<html" not in fragment
    assert "1 / 18" in fragment and 'hx-trigger="every ' in fragment
    label_all(campaign, [annotator_a, annotator_b], lambda user, unit: OK)  # unanimous: every unit closes
    fragment = client.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert "18 / 18" in fragment and "hx-trigger" not in fragment


def test_my_queue_costs_two_queries_per_campaign_and_none_per_label(campaign, bench, lead, annotator_a):
    client = client_for(annotator_a)

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get("/audits/mine/").status_code == 200
        return len(captured)

    queries()  # the session's first request reads what later ones find cached
    first = queries()
    for _ in range(4):
        label_next(campaign, annotator_a, OK)
    assert queries() == first  # labels are read in one query whatever their number
    services.campaign_start(
        services.campaign_create(
            name="second round",
            subject="checklist_items",
            benchmarks=[bench["benchmark"]],
            strata=["category"],
            allocation="proportional",
            size=3,
            seed=2,
            user=lead,
        )
    )
    assert queries() == first + 2
