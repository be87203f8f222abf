"""Nothing in thoth imports the ingest job's command line; the job imports only thoth's core (DESIGN.md,
rules of the house).

Core is every `thoth` module but the surfaces and entry points below. Ingestion itself (parsers, runs,
sources, bucket events) is core (thoth/writes): the server's bucket-event and reindex routes call it
directly, and `python -m ingest` is a command line over it.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO_ROOT

NOT_CORE = ("thoth.mcp", "thoth.ui", "thoth.cli", "thoth.app")  # the server's surfaces and entry points


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import in a file, in functions too; relative imports resolved to their package."""
    package = ".".join(path.relative_to(REPO_ROOT).with_suffix("").parts[:-1])
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(part for part in (base, node.module or "") if part)
            found += [(node.lineno, module)] + [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
    return found


def files(package: str) -> list[Path]:
    return sorted((REPO_ROOT / package).rglob("*.py"))


def test_no_thoth_module_imports_the_ingest_job() -> None:
    offending = [
        f"{path.relative_to(REPO_ROOT)}:{line}: {module}"
        for path in files("thoth")
        for line, module in imported_modules(path)
        if module == "ingest" or module.startswith("ingest.")
    ]
    assert files("thoth") and not offending, offending


def test_the_ingest_job_imports_only_thoths_core() -> None:
    offending = [
        f"{path.relative_to(REPO_ROOT)}:{line}: {module}"
        for path in files("ingest")
        for line, module in imported_modules(path)
        if any(module == name or module.startswith(name + ".") for name in NOT_CORE)
    ]
    assert files("ingest") and not offending, offending


def test_importing_all_of_thoth_and_building_the_server_loads_no_ingest_module(tmp_path: Path) -> None:
    # a fresh interpreter: this test process has imported ingest already (conftest)
    script = """
import pkgutil, sys, importlib
import thoth
from thoth.config import Settings
names = [m.name for m in pkgutil.walk_packages(thoth.__path__, "thoth.")]
for name in names:
    importlib.import_module(name)
from thoth.mcp.server import create_app
create_app(Settings.from_env({}, db_uri=sys.argv[1], admin_token="x"), warm_up=False)
loaded = sorted(m for m in sys.modules if m == "ingest" or m.startswith("ingest."))
print(len(names), loaded)
"""
    result = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "db")], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    count, loaded = result.stdout.split(" ", 1)
    assert int(count) > 50 and loaded.strip() == "[]", result.stdout
