"""The REST API, one module per benchmark kind (checklist, choice, dialogue, hierarchy), core (ingest, jobs,
benchmarks, runs, attempts), verdicts (the verdict stream) and urls (mounted at /api/). Each view reads through
the same selectors and metrics modules as the pages."""
