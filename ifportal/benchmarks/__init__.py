"""The speed and memory benchmark of docs/performance.md (`python manage.py benchmark`): tooling, not product.

It lives outside `runs/` so that the code version keying every cache (`runs.cache.CODE_VERSION`, a digest of
the runs app and the templates) never changes when a benchmark does: `study` generates a study in the real
source formats and measures ingest, memory, pages and load; `long_trajectory` the one-attempt transcript of tens
of thousands of messages; `search_corpus` grows the search table to a gigabyte; `browser` opens the pages in
headless Chromium. The product never imports this package (tests/benchmarks/test_apart.py).
"""
