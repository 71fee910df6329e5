"""/favicon.ico: browsers ask for it on their own, signed in or not; it must not be a 404 in their console."""

import pytest
from django.contrib.auth.models import Group
from django.contrib.staticfiles import finders


@pytest.mark.django_db
def test_favicon_ico_sends_every_visitor_to_the_portal_icon(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 301
    assert response["Location"] == "/static/img/favicon.svg"
    assert finders.find("img/favicon.svg")


@pytest.mark.django_db
def test_a_blind_annotator_gets_the_icon_too(client, django_user_model):
    user = django_user_model.objects.create_user("blind", password="x")
    user.groups.add(Group.objects.get_or_create(name="annotator")[0])
    client.force_login(user)
    assert client.get("/favicon.ico").status_code == 301
