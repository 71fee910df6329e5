"""A kind's scoring rules as its benchmark's reference defines them, one module per kind that has its own:
`choice` (GuideBench's answers compared as its reference scorer compares them) and `hierarchy` (ManyIH's
privilege resolution, which decides the styles a coding answer must follow). The ingest applies them to
what it imports (the hierarchy API also on request); `runs/metrics/` counts what they decided."""
