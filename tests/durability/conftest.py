"""Durability tests reuse the audit actors of tests/audits/conftest.py (loaded by path: tests are
not a package under --import-mode=importlib)."""

import importlib.util
from pathlib import Path


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


audit_fixtures = _load("_ifportal_audit_fixtures", Path(__file__).resolve().parents[1] / "audits" / "conftest.py")

lead = audit_fixtures.lead
annotator_a = audit_fixtures.annotator_a
annotator_b = audit_fixtures.annotator_b
