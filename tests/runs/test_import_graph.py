"""The runs package's imports: no cycle, and the write services and job runner import at module top.

Read from the source (every import statement, at module top or inside a function), so a cycle hidden
behind a function-level import is found too. A cycle between `runs.services`, `runs.ingest` and
`runs.tasks` once made the job framework a registry filled by import side effects.
"""

import ast
from pathlib import Path

RUNS = Path(__file__).resolve().parents[2] / "runs"
#: modules that must import only at module top (no import inside a function to dodge a cycle)
TOP_ONLY = (
    "runs.jobs",
    "runs.services",
    "runs.recheck",
    "runs.tasks",
    "runs.ingest",
    "runs.ingest.lookups",
    "runs.ingest.native",
    "runs.selectors",
    "runs.views.jobs",
    "runs.views.recheck",
)


def _modules() -> dict[str, tuple[Path, bool]]:
    out = {}
    for path in sorted(RUNS.rglob("*.py")):
        if "migrations" in path.parts:
            continue
        parts = ["runs", *path.relative_to(RUNS).with_suffix("").parts]
        package = parts[-1] == "__init__"
        out[".".join(parts[:-1] if package else parts)] = (path, package)
    return out


def _imports(modules) -> dict[str, dict[str, bool]]:
    """module -> {imported runs module: whether the import is at module top}."""

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, dict[str, bool]] = {}
    for name, (path, package) in modules.items():
        tree = ast.parse(path.read_text())
        top = {id(node) for node in tree.body}
        here = name if package else name.rpartition(".")[0]
        edges = graph.setdefault(name, {})
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = here
                for _ in range(max(node.level - 1, 0)):
                    base = base.rpartition(".")[0]
                module = (base + (f".{node.module}" if node.module else "")) if node.level else node.module
                targets = [module, *(f"{module}.{alias.name}" for alias in node.names)]
            else:
                continue
            for target in targets:
                found = known(target)
                if found and found != name:
                    edges[found] = edges.get(found, False) or id(node) in top
    return graph


def _cycles(graph: dict[str, dict[str, bool]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_the_runs_package_has_no_import_cycle():
    assert _cycles(_imports(_modules())) == []


def test_the_job_runner_and_the_write_services_import_at_module_top():
    graph = _imports(_modules())
    local = {name: sorted(m for m, at_top in graph[name].items() if not at_top) for name in TOP_ONLY}
    assert {name: found for name, found in local.items() if found} == {}


def test_it_finds_a_cycle_through_a_function_level_import():
    graph = {
        "runs.a": {"runs.b": True},
        "runs.b": {"runs.c": True},
        "runs.c": {"runs.a": False},
        "runs.d": {"runs.a": True},
    }
    assert _cycles(graph) == [["runs.a", "runs.b", "runs.c"]]


def _imported_at_top(graph: dict[str, dict[str, bool]], start: str) -> set[str]:
    """Every runs module importing `start` imports at module top, directly or through others, with the package of
    each (a submodule is imported after its package)."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        name = todo.pop()
        for module, at_top in graph.get(name, {}).items():
            parents = [".".join(module.split(".")[:n]) for n in range(2, module.count(".") + 2)]
            for found in (m for m in parents if m in graph and at_top and m not in seen):
                seen.add(found)
                todo.append(found)
    return seen


def test_a_write_service_does_not_import_the_html_renderer():
    """Writers announce a committed change (runs.signals.benchmarks_written) and cache warming
    (runs.cache_warming.after_write) receives it: importing a writer or the job runner loads neither the warming nor
    the renderer, nor the readers it reads through."""
    graph = _imports(_modules())
    for writer in ("runs.services", "runs.jobs"):
        loaded = _imported_at_top(graph, writer)
        assert "runs.signals" in loaded
        assert not loaded & {
            "runs.cache_warming",
            "runs.leaderboard_page",
            "runs.selectors",
            "runs.selectors.checklist",
        }, writer


#: what a metrics module may not import: metrics are pure functions of rows, the reads are selectors
READS = ("runs.models", "django.db", "runs.selectors")


def _imported_names(name: str, path: Path, package: bool) -> set[str]:
    """Every absolute module name an import statement of this module names (at module top or in a function)."""
    here = name if package else name.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = here
            for _ in range(max(node.level - 1, 0)):
                base = base.rpartition(".")[0]
            module = (base + (f".{node.module}" if node.module else "")) if node.level else node.module
            names.update([module, *(f"{module}.{alias.name}" for alias in node.names)])
    return names


def test_metrics_are_pure_functions_of_rows():
    """No module under runs/metrics/ imports runs.models, django.db or runs.selectors: a selector reads the rows and
    hands them to the metrics."""
    found = {}
    for name, (path, package) in _modules().items():
        if not name.startswith("runs.metrics."):
            continue
        reads = sorted(
            n for n in _imported_names(name, path, package) if any(n == r or n.startswith(f"{r}.") for r in READS)
        )
        if reads:
            found[name] = reads
    assert found == {}


def test_it_finds_a_read_in_a_metrics_module(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("import math\n\ndef f():\n    from ..models import Verdict\n    from django.db.models import Q\n")
    assert _imported_names("runs.metrics.m", path, False) >= {"runs.models", "runs.models.Verdict", "django.db.models"}
