"""The server never imports the ingest job; the job imports only thoth's core (DESIGN.md, rules of the house).

Core is every `thoth` module but the surfaces and entry points below. The routes that hand work to the
job (bucket events, workshop reindex) load it by name (thoth/writes/jobs.py), so a server without it
still starts, and answers those routes with the reason.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.conftest import REPO_ROOT, LiveServer, make_settings
from thoth.config import Settings
from thoth.writes.jobs import JobHooks, JobUnavailable, load_hooks

NOT_CORE = ("thoth.mcp", "thoth.ui", "thoth.cli", "thoth.app")  # the server's surfaces and entry points
ADMIN = "layering-admin-token"


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


def test_the_server_loads_the_jobs_hooks_by_name() -> None:
    from ingest.hooks import HOOKS

    assert isinstance(HOOKS, JobHooks) and load_hooks(make_settings(Path("unused"))) is HOOKS
    with pytest.raises(JobUnavailable, match=r"no_such_job\.hooks, THOTH_INGEST_HOOKS\) cannot be loaded"):
        load_hooks(make_settings(Path("unused"), ingest_hooks="no_such_job.hooks"))
    assert Settings.from_env({"THOTH_INGEST_HOOKS": " other_job.hooks "}).ingest_hooks == "other_job.hooks"
    with pytest.raises(JobUnavailable, match="THOTH_INGEST_HOOKS is empty"):
        load_hooks(make_settings(Path("unused"), ingest_hooks=""))


def test_a_server_without_the_job_answers_reindex_with_the_reason(tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "db", admin_token=ADMIN, ingest_hooks="no_such_job.hooks")
    with LiveServer(settings) as live:
        response = httpx.post(
            live.url + "/internal/workshop-index/reindex", headers={"Authorization": f"Bearer {ADMIN}"}, timeout=60
        )
    assert response.status_code == 503
    assert response.json()["status"] == "failed" and "no_such_job.hooks" in response.json()["error"]
