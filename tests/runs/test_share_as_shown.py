"""A snapshot shows what its source showed, frozen, in the same words: for every page of every kind, the public page
of a share link says every note, caveat, heading and number the page said (spreads included), and the words about
what a link's attempt pages show are the same, and true, on each of them."""

import html
import re
from html.parser import HTMLParser

import pytest
from django.contrib.auth.models import Group
from django.test import Client
from django.urls import reverse

from runs import sharing
from runs.frozen_html import frozen_page, relinked
from runs.models import ShareLink, Verdict

from .test_page_frame import CASES, DATA, _object_page, _page_url, portal  # noqa: F401  (portal: every kind's demo)

pytestmark = pytest.mark.django_db

#: classes whose text is what a page says about its numbers (notes, caveats, exclusions, spreads, empty states)
SAID = ("note", "notice", "exclusion", "reference-notes", "pm", "empty", "empty-small", "help")
FROZEN_WORDS = "as they were when the link was made"


class _Said(HTMLParser):
    """The text a reader takes from a page's <main>: headings, notes and caveats (SAID), numeric cells, outside the
    page's controls (forms, tabs, the export toolbar), which a snapshot has no use for."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.open: list[tuple[str, bool, bool]] = []  # (tag, said, control)
        self.found: list[str] = []
        self.parts: dict[int, list[str]] = {}
        self.main = False

    def handle_starttag(self, tag, attrs):
        if tag == "main":
            self.main = True
        if not self.main or tag in ("br", "input", "meta", "link", "col", "hr"):
            return
        found = dict(attrs)
        classes = set((found.get("class") or "").split())
        control = tag in ("form", "nav", "select", "button", "script") or bool(
            classes & {"page-tools", "crumbs", "live-only"}
        )
        said = tag in ("h1", "h2", "h3") or bool(classes & set(SAID)) or (tag == "td" and "num" in classes)
        self.open.append((tag, said, control))
        if said:
            self.parts[len(self.open)] = []

    def handle_endtag(self, tag):
        if tag == "main":
            self.main = False
        while self.open:
            depth = len(self.open)
            name, said, _ = self.open.pop()
            if said:
                text = " ".join("".join(self.parts.pop(depth)).split())
                if text and not any(c for _, _, c in self.open):
                    self.found.append(text)
            if name == tag:
                break

    def handle_data(self, data):
        if any(c for _, _, c in self.open):
            return
        for depth in self.parts:
            self.parts[depth].append(data)


def said(body: str) -> list[str]:
    parser = _Said()
    parser.feed(body)
    return parser.found


def words(body: str) -> str:
    """All the text of a page, whitespace collapsed."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", body)).split())


def _lead(django_user_model, name="lead") -> Client:
    user = django_user_model.objects.create_user(name, password=f"pw-{name}-1")
    user.groups.add(Group.objects.get_or_create(name="lead")[0])
    client = Client()
    client.force_login(user, backend="ifportal.auth.CachedModelBackend")  # the backend that reads users
    return client


def _share(client, slug: str, url: str, *, attempts: bool) -> str:
    data = {"path": url, "expires_in": "7", **({"include_attempts": "on"} if attempts else {})}
    created = client.post(reverse("runs:page-share-create", args=[slug]), data)
    assert created.status_code == 200, created.content.decode()[:300]
    return re.search(r"/s/([A-Za-z0-9_-]+)/", created.content.decode()).group(1)


@pytest.mark.parametrize(
    ("kind", "name"),
    CASES + [(kind, "one object") for kind in sorted(DATA)],
    ids=[name for _, name in CASES] + [f"{kind}: one object" for kind in sorted(DATA)],
)
def test_a_snapshot_says_everything_its_page_said(kind, name, portal, django_user_model):  # noqa: F811
    lead = _lead(django_user_model)
    slug = DATA[kind][1]
    url = _object_page(kind)[0] if name == "one object" else _page_url(lead, name, slug)
    page = lead.get(url).content.decode()
    token = _share(lead, slug, url, attempts=True)
    public = Client().get(reverse("runs:share", args=[token])).content.decode()
    shown = words(public)
    missing = [text for text in said(page) if text not in shown]
    assert said(page) and not missing, f"{name}: the snapshot leaves out {missing[:5]}"


def test_the_shared_leaderboard_keeps_the_scorers_caveats_and_the_spread_of_macro_csr(portal, django_user_model):  # noqa: F811
    lead = _lead(django_user_model)
    url = reverse("runs:checklist-leaderboard", args=[DATA["checklist"][1]])
    page = words(lead.get(url).content.decode())
    public = words(
        Client()
        .get(reverse("runs:share", args=[_share(lead, DATA["checklist"][1], url, attempts=True)]))
        .content.decode()
    )
    unrecognised = re.search(r"\d+ verdicts? carried a result string the reference scorer does not recognise", page)
    unscored = re.search(r"\d+ judge results? scored nothing", page)
    assert unrecognised and unscored  # the demo's judges write "Success" now and then, and one times out
    assert unrecognised.group(0) in public and unscored.group(0) in public
    spreads = re.findall(r"± \d+\.\d\d", page)
    assert "Macro CSR %" in public and spreads and spreads == re.findall(r"± \d+\.\d\d", public)


def test_the_shared_conflict_page_names_its_judge_and_has_no_empty_attempt_table(portal, django_user_model):  # noqa: F811
    lead = _lead(django_user_model)
    slug = DATA["conflict"][1]
    url = reverse("runs:conflict-metrics", args=[slug])
    token = _share(lead, slug, url, attempts=True)
    public = Client().get(reverse("runs:share", args=[token])).content.decode()
    judge = ShareLink.objects.get(token_hash=sharing.token_hash(token)).snapshot["judges"][0]
    assert f"judge {judge}" in words(public)
    assert "Attempts behind the chosen cell</h2>" not in public and "No rows." not in public
    assert "Click a rate for its attempts" in lead.get(url).content.decode()  # words about the live page's links ...
    assert "Click a rate" not in public  # ... which the frozen page, whose rates link nowhere, leaves out
    assert public.index("Resolution rate per conflict type") < public.index("System-prompt rate per scenario")


def test_a_links_attempt_list_and_attempt_page_both_show_verdicts_as_they_were(portal, django_user_model):  # noqa: F811
    """The attempts behind a shared cell said their failing items were read now, the attempt page that its verdicts
    were as they were when the link was made: both now read verdicts up to the link, and say so in the same words."""
    lead = _lead(django_user_model)
    slug = DATA["checklist"][1]
    url = reverse("runs:checklist-leaderboard", args=[slug])
    token = _share(lead, slug, url, attempts=True)
    link = ShareLink.objects.get(token_hash=sharing.token_hash(token))
    model = link.snapshot["overall"][0]["model"]
    cell = reverse("runs:share-attempts", args=[token]) + f"?model={model}"
    rows = sharing.snapshot_attempt_rows(link, model=model, group=None)
    failing = set(Verdict.objects.filter(result="fail").values_list("attempt_id", "item_id"))
    passed = next(
        v
        for v in Verdict.objects.filter(attempt_id__in=[r.attempt_id for r in rows[:10]], result="pass")
        .select_related("item")
        .order_by("id")
        if (v.attempt_id, v.item_id) not in failing
    )
    # a later import replaces the verdict: a new row, stored after the link was made, failing the item
    passed.delete()
    Verdict.objects.create(
        attempt_id=passed.attempt_id,
        item=passed.item,
        judge_id=passed.judge_id,
        result="fail",
        reasoning="LATER-REASONING",
    )
    listed = Client().get(cell).content.decode()
    opened = Client().get(reverse("runs:share-attempt", args=[token, passed.attempt_id])).content.decode()
    assert (
        f"<code>{passed.item.key}</code>" not in listed.split(f"/attempts/{passed.attempt_id}/", 1)[1].split("</tr>")[0]
    )
    assert "LATER-REASONING" not in opened
    assert FROZEN_WORDS in words(listed) and FROZEN_WORDS in words(opened)
    assert "read now" not in words(listed)


def test_the_frozen_markup_keeps_words_and_drops_controls_and_code():
    page = (
        '<html><head><link rel="stylesheet" href="/static/css/checklist.1a2b3c4d5e6f.css"></head><body>'
        '<header><a href="/">portal</a></header><main>'
        '<p class="crumbs"><a href="/">Home</a></p><form method="get"><select name="run"><option>r1</option>'
        '</select><button>Apply</button></form><nav><a href="/b/x/other/">Other</a></nav>'
        '<div class="toolbar page-tools" id="page-tools"><a href="?export=csv">CSV</a></div>'
        '<h1 onclick="alert(1)">Title &amp; more</h1><p class="note">86 verdicts &lt;b&gt;unrecognised</p>'
        '<script>alert(2)</script><a href="javascript:alert(3)">bad</a>'
        '<td class="num" hx-get="/x/">23.13 <span class="pm">± 1.20</span></td>'
        '<div data-plotly="f" data-figure="{&quot;data&quot;: []}"></div>'
        '<a href="/attempts/7/#turn-2">seven</a><a href="/help/metrics/#checklist">how</a></main></body></html>'
    )
    frozen = frozen_page(page)
    assert frozen["stylesheets"] == ["checklist"] and frozen["charts"]
    body = frozen["html"]
    assert "<script" not in body and "alert" not in body.replace("javascript:alert(3)", "")
    assert "onclick" not in body and "hx-get" not in body and "<form" not in body and "Home" not in body
    assert "Other" not in body and "CSV" not in body and "portal" not in body
    assert "<h1>Title &amp; more</h1>" in body and "&lt;b&gt;unrecognised" in body and "± 1.20" in body
    shown = relinked(body, href=lambda target: "/s/t/attempts/7/" if target.startswith("/attempts/7/") else None)
    assert '<a href="/s/t/attempts/7/">seven</a>' in shown and "javascript" not in shown and "</p>bad<td" in shown
    assert "how" in shown and 'href="/help' not in shown


def test_a_frozen_page_links_only_to_what_its_link_opens(portal, django_user_model):  # noqa: F811
    lead = _lead(django_user_model)
    slug = DATA["conflict"][1]
    url = reverse("runs:conflict-metrics", args=[slug])
    document = lead.get(url + "?export=json").json()
    row = document["tables"][0]["rows"][0]
    cell = f"{url}?label={row['label']}&type={row['type']}"
    for attempts in (True, False):
        token = _share(lead, slug, cell, attempts=attempts)
        public = Client().get(reverse("runs:share", args=[token])).content.decode()
        hrefs = set(re.findall(r'href="([^"]+)"', public))
        outside = [h for h in hrefs if not h.startswith((f"/s/{token}/", "#", "/help/", "/static/", "/login/"))]
        assert not outside
        opened = {int(i) for i in re.findall(rf"/s/{token}/attempts/(\d+)/", public)}
        link = ShareLink.objects.get(token_hash=sharing.token_hash(token))
        assert opened <= set(link.attempt_ids) and bool(opened) == attempts
        assert all(Client().get(reverse("runs:share-attempt", args=[token, i])).status_code == 200 for i in opened)


def test_hostile_markup_and_text_never_become_a_link_the_relinker_did_not_make():
    shown_text = html.escape('<a href="javascript:window.x=1">chart link</a>', quote=True)  # how a page shows a name
    page = (
        '<main><td><a href="/b/x/attempts/?model=m">' + shown_text + "</a></td>"
        '<a href="JavaScript:alert(1)">js</a><a href=" data:text/html,x">data</a><a href="vbscript:x">vb</a>'
        '<a href="https://elsewhere.example/">far</a><a href="//elsewhere.example/">near</a>'
        '<a href="/attempts/7/"><a href="javascript:alert(2)">nested</a></a>'
        '<a href="/attempts/8/">open <a href="javascript:alert(3)">to the end</main>'
    )
    body = frozen_page(page)["html"]
    shown = relinked(body, href=lambda target: target)  # a relinker that keeps every target it is given
    targets = re.findall(r'<a\b[^>]*\bhref="([^"]*)"', shown)
    assert targets == ["/b/x/attempts/?model=m", "/attempts/7/", "/attempts/8/"]
    assert 'href="' not in re.sub(r"<a\b[^>]*>", "", shown)  # the page's text keeps its quotes escaped
    assert shown_text in shown
    assert "</td>jsdatavbfarnear<a " in shown and ">nested</a>" in shown and ">open to the end</a>" in shown
    assert shown.count("<a ") == shown.count("</a>") == 3
