"""Starting an ingest run outside the server: a child process, or an execution of the ingest job on Cloud Run
(THOTH_INGEST_JOB). Either runs `thoth ingest … --run-id ID`, which records its progress in the index."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from typing import Any

from thoth.config import Settings
from thoth.errors import ServerFault
from thoth.source_spec import SourceSpec

log = logging.getLogger("thoth.ingest")

CLOUD_PLATFORM = "https://www.googleapis.com/auth/cloud-platform"
API_TIMEOUT_SECONDS = 30
RUN_API_URL = "https://run.googleapis.com"  # the Cloud Run Admin API


class LaunchError(ServerFault):
    """The run could not be started (the job is not configured, the Admin API refused); the message says why."""


def records_here(settings: Settings) -> bool:
    """Whether the server writes a run's records itself. A Cloud Run service only reads the index (its identity
    may not write it): there the job records the run when it starts, and cancel_run and remove_source are
    executions of the job too (`thoth ingest cancel`, `thoth ingest remove`)."""
    return not settings.ingest_job


def ingest_args(spec: SourceSpec, name: str, run_id: str, db_uri: str, *, trigger: str, started_by: str) -> list[str]:
    """The ingest command's arguments for one run of `spec` (its scope given, so the run records it)."""
    args = ["--source", spec.uri, "--name", name, "--db", db_uri, "--run-id", run_id]
    args += ["--trigger", trigger, "--started-by", started_by]
    for glob in spec.include:
        args += ["--include", glob]
    for glob in spec.exclude:
        args += ["--exclude", glob]
    return args


def launch_local(settings: Settings, args: list[str]) -> str:
    """`python -m thoth.cli ingest ARGS` as a child process in a session of its own (a server's restart does
    not stop it), its output in THOTH_CACHE_DIR/runs/; the server's environment, its database named."""
    logs = Path(settings.cache_dir).expanduser() / "runs"
    logs.mkdir(parents=True, exist_ok=True)
    run_id = args[args.index("--run-id") + 1] if "--run-id" in args else uuid.uuid4().hex
    env = {**os.environ, "THOTH_DB_URI": settings.db_uri}
    with open(logs / f"{run_id}.log", "ab") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "thoth.cli", "ingest", *args],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    # a finished child is collected, not left a zombie of the server
    threading.Thread(target=process.wait, name=f"thoth-reap-{process.pid}", daemon=True).start()
    return f"local process {process.pid}"


def launch_cloud_run(settings: Settings, args: list[str], credentials: Any = None) -> str:
    """An execution of THOTH_INGEST_JOB with ARGS as its container's arguments (jobs.run with overrides:
    the server's identity needs only run.jobs.runWithOverrides on that job); its execution's name."""
    if not settings.ingest_job.startswith("projects/") or "/jobs/" not in settings.ingest_job:
        raise LaunchError("THOTH_INGEST_JOB must name the ingest job as projects/P/locations/R/jobs/J")
    import google.auth
    from google.auth.transport.requests import AuthorizedSession

    if credentials is None:
        credentials, _ = google.auth.default(scopes=[CLOUD_PLATFORM])
    session = AuthorizedSession(credentials)
    body = {"overrides": {"containerOverrides": [{"args": ["-m", "ingest", *args]}], "taskCount": 1}}
    url = f"{RUN_API_URL}/v2/{settings.ingest_job}:run"
    try:
        answer = session.post(url, json=body, timeout=API_TIMEOUT_SECONDS)
    except Exception as exc:  # a transport failure: the run was not started
        raise LaunchError(f"the Cloud Run Admin API could not be reached: {exc}") from None
    if answer.status_code >= 400:
        raise LaunchError(f"the Cloud Run Admin API refused to run {settings.ingest_job}: HTTP {answer.status_code}")
    operation = answer.json() if answer.content else {}
    return str((operation.get("metadata") or {}).get("name") or operation.get("name") or settings.ingest_job)


def launch(settings: Settings, args: list[str]) -> str:
    """Start the run: a job execution on Cloud Run, else a child process; where it runs (for the run's record)."""
    return launch_cloud_run(settings, args) if settings.ingest_job else launch_local(settings, args)
