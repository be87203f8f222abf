"""docs/gcs.md's steps "From an empty emulator to a cited answer" run as written: the bash block is
taken from the page and run with bash in the repository root (free ports instead of 4443 and 8080)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO_ROOT, free_port, job_env

HEADING = "## From an empty emulator to a cited answer"


def walkthrough() -> str:
    page = (REPO_ROOT / "docs" / "gcs.md").read_text()
    section = page[page.index(HEADING) :]
    return re.search(r"```bash\n(.*?)```", section, re.S).group(1)


def test_docs_steps_run_from_an_empty_emulator_to_a_cited_answer(onnx_cache: Path) -> None:
    env = job_env(
        EMULATOR_PORT=str(free_port()),
        PORT=str(free_port()),
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
        PYTHONPATH=str(REPO_ROOT),
    )
    proc = subprocess.Popen(
        ["bash", "-euo", "pipefail", "-c", walkthrough()],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # the steps start the emulator and the server in the background
    )
    try:
        out, err = proc.communicate(timeout=300)
    finally:  # whatever the steps left running (a failed step skips their `kill`) goes with their session
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    assert proc.returncode == 0, err[-3000:]
    assert "3 ingested" in out, out
    ref = next(line for line in out.splitlines() if line.startswith("doc://"))
    assert re.fullmatch(r"doc://library/papers/[\w.-]+\.pdf\?version_id=\d+#page=\d+", ref), ref
    citation = json.loads(out.strip().splitlines()[-1])["result"]["structuredContent"]
    key = ref.split("?")[0].removeprefix("doc://library/")
    assert citation["url"] == f"gs://library/{key}" and citation["source_ref"] == ref, citation
