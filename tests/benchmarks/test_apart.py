"""The benchmark apart from the product: its modules and its command are outside the code version that keys
every cache (runs.cache.code_version_files), so changing a benchmark keeps users' cached pages, while changing a
product module still moves the version; and no product module imports the benchmark."""

import ast
import shutil
from importlib import import_module
from pathlib import Path

from django.apps import apps
from django.core.management import get_commands

from runs.cache import PROJECT_ROOT, _code_version, code_version_files

#: the product's packages: none of them may import the benchmark
PRODUCT = ("runs", "audits", "ifportal")


def _benchmark_files(root: Path) -> list[Path]:
    """The benchmark app's modules under `root`, its management command among them."""
    app = Path(apps.get_app_config("benchmarks").path).relative_to(PROJECT_ROOT)
    return sorted((root / app).rglob("*.py"))


def test_the_benchmark_command_and_modules_are_outside_the_code_version():
    command = Path(import_module(f"{get_commands()['benchmark']}.management.commands.benchmark").__file__).resolve()
    modules = _benchmark_files(PROJECT_ROOT)
    assert command in modules
    assert {path.stem for path in modules} >= {"study", "browser", "search_corpus", "long_trajectory", "benchmark"}
    assert set(modules).isdisjoint(code_version_files())


def test_a_benchmark_change_keeps_the_code_version_and_a_product_change_moves_it(tmp_path):
    """On a copy of the project's tree, so the shared sources are never written."""
    for part in ("runs", "templates", "ifportal"):
        shutil.copytree(PROJECT_ROOT / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__"))
    before = _code_version(tmp_path)
    assert before == _code_version()
    for module in _benchmark_files(tmp_path):
        module.write_bytes(module.read_bytes() + b"\n# changed\n")
    assert _code_version(tmp_path) == before
    product = tmp_path / "runs" / "cache.py"
    product.write_bytes(product.read_bytes() + b"\n# changed\n")
    assert _code_version(tmp_path) != before


def _imported(path: Path) -> list[str]:
    """The dotted names a module imports (a relative import resolved against its package)."""
    package = ".".join(path.relative_to(PROJECT_ROOT).parent.parts)
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            module = ".".join(filter(None, [base if node.level else "", node.module or ""]))
            out += [module, *(f"{module}.{alias.name}" for alias in node.names)]
    return out


def test_no_product_module_imports_the_benchmark():
    app = apps.get_app_config("benchmarks")
    found = [
        f"{path.relative_to(PROJECT_ROOT)}: {name}"
        for package in PRODUCT
        for path in sorted((PROJECT_ROOT / package).rglob("*.py"))
        if Path(app.path) not in path.parents
        for name in _imported(path)
        if name == app.name or name.startswith(f"{app.name}.")
    ]
    assert found == []
