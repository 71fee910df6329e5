"""The runs app's layout as docs/README.md states it: a kind is one module in each layer folder, so
`ls runs/*/<kind>.py` shows it whole, and a module beside the layer folders says what it is rather
than taking a kind's name (which would read as one more layer of that kind, or its model)."""

from pathlib import Path

from runs.models import BenchmarkKind

RUNS = Path(__file__).resolve().parents[2] / "runs"


def test_no_module_beside_the_layer_folders_takes_a_kind_s_name():
    kinds = set(BenchmarkKind.values)
    assert sorted(path.name for path in RUNS.glob("*.py") if path.stem in kinds) == []
