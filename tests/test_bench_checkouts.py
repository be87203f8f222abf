"""Benches that compare two checkouts (bench.tool_cpu, bench.served) run each one's own thoth."""

import os
import subprocess
import sys
from pathlib import Path

from bench.search import checkout_env

ROOT = Path(__file__).resolve().parent.parent


def imported_thoth(env: dict[str, str]) -> Path:
    out = subprocess.run(
        [sys.executable, "-c", "import thoth; print(thoth.__file__)"],
        cwd=ROOT,  # a bench runs from this checkout, whose thoth `-c` and `-m` put first on sys.path
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(out.stdout.strip()).resolve()


def test_a_child_given_another_checkout_imports_that_checkouts_thoth(tmp_path):
    (tmp_path / "thoth").mkdir()
    (tmp_path / "thoth" / "__init__.py").write_text("")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    assert imported_thoth(env) == ROOT / "thoth" / "__init__.py"  # what the benches did before
    assert imported_thoth(checkout_env(env)) == tmp_path / "thoth" / "__init__.py"


def test_without_another_checkout_the_environment_is_unchanged():
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    assert checkout_env(env) == env
