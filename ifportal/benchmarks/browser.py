"""What a user sees in a browser, for `manage.py benchmark`: each page checked in Chromium.

The HTTP figures stop at the last byte of the HTML; a person waits for the page to paint, and on the
chart pages for Plotly (a few MB of script, fetched and parsed on a cold cache) to draw every chart.
This opens each page in headless Debian Chromium through Playwright's sync API, a new browser context
per sample so nothing is cached (as a first visit, or after a deploy changed the static files), signed
in with the benchmark's session cookie, and records per sample the first contentful paint, the time
the last chart's SVG appeared (MEASURE, the same script as tests/browser/test_page_timing.py), and the
console errors and uncaught exceptions. Per page: median and p95 over the samples, next to the target
(first paint < 1 s). Chromium's and Playwright's absence is a "not measured: ..." string, as the
benchmark says of wrk.
"""

from __future__ import annotations

import os
import statistics
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

#: Debian's chromium (Playwright drives it through `executable_path`; its own browser downloads are not used)
CHROMIUM = Path(os.environ.get("IFPORTAL_CHROMIUM", "/usr/bin/chromium"))
#: headless in a container as root, and nothing of Chromium's own talking to the network while pages are timed
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
#: a page paints within a second (the long-trajectory attempt page too), and is usable (its document parsed and
#: its deferred scripts run: links, forms and htmx controls answer; charts may still be drawing) within a second
TARGETS = {"first_paint_ms": 1000, "usable_ms": 1000}

#: milliseconds from navigation start to the first contentful paint, to the end of DOMContentLoaded (usable) and
#: to the last chart's SVG (waiting up to 10 s for both); on a page without charts `charts` is 0 and
#: `charts_drawn` is moot
MEASURE = """
async () => {
  const charts = Array.from(document.querySelectorAll('[data-plotly]'));
  const drawn = () => charts.every(c => c.querySelector('.main-svg'));
  const painted = () => performance.getEntriesByName('first-contentful-paint')[0];
  const start = Date.now();
  while (!(drawn() && painted()) && Date.now() - start < 10000) { await new Promise(r => setTimeout(r, 10)); }
  const paint = painted();
  const navigation = performance.getEntriesByType('navigation')[0];
  const usable = navigation && navigation.domContentLoadedEventEnd > 0 ? navigation.domContentLoadedEventEnd : null;
  return {charts: charts.length, drawn: drawn(), first_paint: paint ? paint.startTime : null, usable: usable,
          charts_drawn: performance.now()};
}
"""
#: what a page's figures keep of its error messages (the count is whole)
ERRORS_KEPT = 5


def chromium_figures(
    base_url: str, cookie: str, pages: dict[str, str], *, samples: int = 5, executable: Path = CHROMIUM
) -> dict | str:
    """Each page of `pages` ({label: path under `base_url`}) opened `samples` times in headless Chromium,
    each time in a new context (a cold browser cache) carrying `cookie` ("name=value", as
    `study.session_cookie_for` makes it): {"browser", "samples", "pages": {label: figures}, load averages}
    with first paint and charts drawn (median and p95, ms) and the console errors of every sample;
    a "not measured: ..." string when Chromium or Playwright is absent or Chromium cannot start.
    Playwright runs in a thread of its own, which makes no database query."""
    if not executable.exists():
        return f"not measured: {executable} is absent (Debian: apt-get install chromium)"
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return "not measured: playwright is not installed (pip install -e '.[test]')"
    # in a thread of its own: Playwright's sync API refuses a thread whose asyncio loop runs, as the test
    # session's does once a browser test has started Playwright there
    with ThreadPoolExecutor(max_workers=1) as thread:
        return thread.submit(_figures, sync_playwright, base_url, cookie, pages, samples, executable).result()


def _figures(
    sync_playwright, base_url: str, cookie: str, pages: dict[str, str], samples: int, executable: Path
) -> dict | str:
    """`chromium_figures`' measurement, in the thread it runs in."""
    name, _, value = cookie.partition("=")
    with sync_playwright() as playwright:
        try:
            browser = playwright.chromium.launch(executable_path=str(executable), headless=True, args=CHROMIUM_ARGS)
        except Exception as exc:  # a chromium that cannot start is the machine's problem: said, not raised
            return f"not measured: {executable} could not be started: {str(exc).splitlines()[0]}"
        out = {
            "browser": f"chromium {browser.version}",
            "samples": samples,
            "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        }  # Chromium wants the cores too
        try:
            out["pages"] = {
                label: _page_figures(browser, base_url + path, {"name": name, "value": value, "url": base_url}, samples)
                | {"path": path}
                for label, path in pages.items()
            }
        finally:
            browser.close()
    return out | {"load_average_at_end": [round(x, 2) for x in os.getloadavg()]}


def _page_figures(browser, url: str, cookie: dict, samples: int) -> dict:
    """One page's samples, each in its own context, summed up as median and p95. A sample whose page does
    not load within 30 s is counted (`failed_samples`, its error kept), not raised: the other pages and
    the rest of the benchmark are still measured."""
    from playwright.sync_api import Error as PlaywrightError

    measured, errors, statuses, failed = [], [], set(), 0
    for _ in range(samples):
        context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
        try:
            context.set_default_timeout(30_000)
            context.add_cookies([cookie])
            page = context.new_page()
            page.on(
                "console",
                lambda message: errors.extend([f"console: {message.text}"] if message.type == "error" else []),
            )
            page.on("pageerror", lambda error: errors.append(f"uncaught: {error}"))
            response = page.goto(url, wait_until="domcontentloaded")
            statuses.add(response.status if response else None)
            measured.append(page.evaluate(MEASURE))
            page.wait_for_load_state("load")  # errors of what loads after the paint count too (untimed)
        except PlaywrightError as exc:
            failed += 1
            errors.append(f"failed: {str(exc).splitlines()[0]}")
        finally:
            context.close()
    charts = max((m["charts"] for m in measured), default=0)
    return {
        "statuses": sorted(statuses, key=str),
        "charts": charts,
        "first_paint": _median_p95([m["first_paint"] for m in measured]),
        "usable": _median_p95([m["usable"] for m in measured]),
        "charts_drawn": _median_p95([m["charts_drawn"] for m in measured if m["drawn"]]) if charts else None,
        "failed_samples": failed,
        "not_painted": sum(m["first_paint"] is None for m in measured),
        "charts_not_drawn": sum(not m["drawn"] for m in measured),
        "console_errors": len(errors) - failed,
        "errors": errors[:ERRORS_KEPT],
        "target_first_paint_ms": TARGETS["first_paint_ms"],
        "target_usable_ms": TARGETS["usable_ms"],
    }


def _median_p95(values: list[float | None]) -> dict | None:
    """{"median_ms", "p95_ms"} of the values measured (None: not within MEASURE's 10 s), or None if none was."""
    got = sorted(v for v in values if v is not None)
    if not got:
        return None
    return {
        "median_ms": round(statistics.median(got), 1),
        "p95_ms": round(got[min(len(got) - 1, int(round(0.95 * (len(got) - 1))))], 1),
    }


def chromium_lines(figures: dict | str) -> list[str]:
    """What `manage.py benchmark` prints of `chromium_figures`: a line per page, or why nothing was measured."""
    if isinstance(figures, str):
        return [figures]
    return [chromium_line(label, page) for label, page in figures["pages"].items()]


def chromium_line(label: str, figures: dict) -> str:
    """One printed line of a page's figures, as `manage.py benchmark` prints its others."""
    paint, drawn = figures["first_paint"], figures["charts_drawn"]
    text = (
        f"{label} in Chromium (cold cache): first paint "
        + (f"median {paint['median_ms']:.0f} ms, p95 {paint['p95_ms']:.0f} ms" if paint else "never")
        + f" (target {figures['target_first_paint_ms']} ms)"
    )
    usable = figures.get("usable")
    text += (
        "; usable "
        + (f"median {usable['median_ms']:.0f} ms, p95 {usable['p95_ms']:.0f} ms" if usable else "never")
        + f" (target {figures.get('target_usable_ms', TARGETS['usable_ms'])} ms)"
    )
    if figures["charts"]:
        text += f"; {figures['charts']} chart{'s' if figures['charts'] > 1 else ''} drawn " + (
            f"median {drawn['median_ms']:.0f} ms, p95 {drawn['p95_ms']:.0f} ms" if drawn else "never"
        )
    text += f"; {figures['console_errors']} console errors"
    for count, what in (
        (figures["failed_samples"], "not loaded within 30 s"),
        (figures["not_painted"], "not painted within 10 s"),
        (figures["charts_not_drawn"], "charts not drawn within 10 s"),
    ):
        if count:
            text += f"; {count} samples {what}"
    if figures["statuses"] not in ([], [200]):
        text += f" (HTTP {', '.join(map(str, figures['statuses']))})"
    return text
