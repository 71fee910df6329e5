"""The transcript search page as data (runs.pages): the hits of the page shown, for its CSV/JSON exports and its
share link (a page of hits, as the page lists them; the next page is its own address)."""

from __future__ import annotations

from runs.pages import Column, PageData, Table, page_builder


@page_builder(("hits", "Search hits"), links_attempts=True, per_item=("hits",))
def search_page(context: dict) -> PageData:
    """Each hit of the page: where it was found (run, model, instance, message or reasoning), the verdict it belongs
    to, and the text around the match as the page shows it ("…" where the text goes on)."""
    page = context.get("page")
    hits = page.hits if page is not None and not context.get("error") else []
    table = Table(
        "hits",
        "Search hits",
        (
            Column("instance", "Instance", link="attempt_id"),
            Column("run", "Run"),
            Column("model", "Model"),
            Column("source", "Found in"),
            Column("where", "Where"),
            Column("judge", "Judge"),
            Column("result", "Verdict"),
            Column("item", "Item"),
            Column("text", "Text around the match"),
        ),
        [
            {
                "attempt_id": h.attempt_id,
                "instance": h.instance,
                "run": h.run,
                "model": h.model,
                "source": h.source,
                "where": h.where,
                "judge": h.judge,
                "result": h.result,
                "item": h.item,
                "text": ("…" if h.starts_cut else "")
                + "".join(text for text, _ in h.segments)
                + ("…" if h.ends_cut else ""),
            }
            for h in hits
        ],
    )
    facts = {"query": context.get("q", ""), "mode": context["chosen"]["mode"]} if context.get("q") else {}
    return PageData("Search", [table], facts=facts)
