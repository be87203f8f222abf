"""Git sources against a real repository made here with the git command line: commits, a rename, a
delete and a second branch; a re-run reads only what changed; each document knows its last change."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.conftest import LiveServer, error_text, job_env, make_settings, ok, run_ingest
from thoth.config import Settings
from thoth.records import Chunk, Document, Source
from thoth.source_spec import SourceSpec, shown_location
from thoth.store import Store
from thoth.writes import git_source
from thoth.writes.objects import SourceError
from thoth.writes.writer import Writer

ENV = {"GIT_AUTHOR_NAME": "Ann", "GIT_AUTHOR_EMAIL": "ann@example.com", "GIT_COMMITTER_NAME": "Ann"}
ENV |= {"GIT_COMMITTER_EMAIL": "ann@example.com"}


def git(repo: Path, *args: str, date: str = "2026-11-20T10:00:00+00:00") -> str:
    env = {**os.environ, **ENV, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


def commit(repo: Path, files: dict[str, str | None], subject: str, date: str) -> str:
    for path, text in files.items():
        target = repo / path
        if text is None:
            git(repo, "rm", "-q", path)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        git(repo, "add", path)
    git(repo, "commit", "-q", "-m", subject, date=date)
    return git(repo, "rev-parse", "HEAD").strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "handbook"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    commit(
        root,
        {
            "people/leave.md": "# Leave\n\nAsk your manager for annual leave two weeks ahead.\n",
            "engineering/deploys.md": "# Deploys\n\nDeploy on weekdays before 3pm; never on Fridays.\n",
            "engineering/oncall.md": "# On-call\n\nThe on-call engineer answers pages within 15 minutes.\n",
            "tools/rotate.py": "def rotate_key(vault):\n    return vault.rotate('signing')\n",
        },
        "Start the handbook",
        "2026-11-01T09:00:00+00:00",
    )
    return root


def test_git_source_commits_renames_deletes_and_refs(repo: Path, tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "db", cache_dir=str(tmp_path / "cache"))
    url = repo.as_uri()
    first = Writer(settings).run(url)
    assert first.source_id == "handbook" and not first.failed
    assert sorted(first.ingested) == [
        "engineering/deploys.md",
        "engineering/oncall.md",
        "people/leave.md",
        "tools/rotate.py",
    ]
    store = Store(settings)
    start = git(repo, "rev-parse", "HEAD").strip()
    leave = store.first(Document, {"key": "people/leave.md"})
    assert leave is not None and leave.version == start  # the last commit that changed it
    state = json.loads(store.metadata.get("git:handbook"))
    assert state["commit"] == start and state["files"]["people/leave.md"][1:] == [
        "2026-11-01T09:00:00+00:00",
        "Start the handbook",
    ]

    # one commit edits a file, renames one and deletes one
    git(repo, "mv", "engineering/oncall.md", "engineering/on-call.md")
    second = commit(
        repo,
        {
            "people/leave.md": "# Leave\n\nAsk your manager for annual leave three weeks ahead.\n",
            "tools/rotate.py": None,
        },
        "Leave needs three weeks; on-call page renamed; rotate script gone",
        "2026-11-25T12:00:00+00:00",
    )
    chunks_before = {c.chunk_id for c in store.find(Chunk, {"source_id": "handbook"})}
    run = Writer(settings).run(url)
    assert sorted(run.ingested) == ["engineering/on-call.md", "people/leave.md"]
    assert sorted(run.removed) == ["engineering/oncall.md", "tools/rotate.py"]
    store = Store(settings)
    chunks_after = {c.chunk_id: c for c in store.find(Chunk, {"source_id": "handbook"})}
    new = {chunk_id for chunk_id in chunks_after if chunk_id not in chunks_before}
    assert {chunks_after[c].key for c in new} == {"people/leave.md"}  # the rename re-embedded nothing
    renamed = store.first(Document, {"key": "engineering/on-call.md"})
    assert renamed is not None and renamed.version == second
    assert store.first(Document, {"key": "engineering/deploys.md"}).version == start
    state = json.loads(store.metadata.get("git:handbook"))
    assert state["files"]["engineering/on-call.md"] == [second, "2026-11-25T12:00:00+00:00", run_subject(repo)]
    assert Writer(settings).run(url).changed == 0  # nothing new: nothing read

    # a second ref: a branch where the deploy rule differs
    git(repo, "checkout", "-q", "-b", "freeze")
    commit(
        repo,
        {"engineering/deploys.md": "# Deploys\n\nNo deploys during the freeze.\n"},
        "Freeze",
        "2026-11-26T08:00:00+00:00",
    )
    git(repo, "checkout", "-q", "main")
    branch = Writer(settings).run(SourceSpec.parse(str(repo), ref="freeze"), name="handbook-freeze")
    assert branch.source_id == "handbook-freeze" and len(branch.ingested) == 3
    frozen = store.first(Document, {"source_id": "handbook-freeze", "key": "engineering/deploys.md"})
    assert frozen is not None and frozen.version == git(repo, "rev-parse", "freeze").strip()
    with pytest.raises(SourceError, match="ref 'nope' is not a branch, tag or commit"):
        Writer(settings).run(f"{url}#nope", name="other")


def run_subject(repo: Path) -> str:
    return git(repo, "log", "-1", "--format=%s").strip()


def test_private_token_goes_in_the_environment_never_the_command_line(tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "db", cache_dir=str(tmp_path / "cache"), git_token="s3cret-token")
    repo = git_source.Repo(settings, "https://git.example.com/acme/handbook.git")
    assert repo.env["GIT_CONFIG_KEY_0"] == "http.extraHeader" and "s3cret-token" not in repr(settings)
    (tmp_path / "token").write_text("from-file\n")  # a mounted secret
    assert Settings.from_env({"THOTH_GIT_TOKEN_FILE": str(tmp_path / "token")}).git_token == "from-file"
    with pytest.raises(SourceError, match="git clone failed") as failed:
        git_source.Repo(settings, "file:///nonexistent/s3cret-token.git").sync()
    assert "s3cret-token" not in str(failed.value) and "***" in str(failed.value)  # masked wherever it shows
    assert shown_location("https://ann:pw@git.example.com/h.git") == "https://git.example.com/h.git"


def ago(days: int) -> str:
    return (datetime.now(UTC) - timedelta(days=days)).replace(microsecond=0).isoformat()


def test_recent_updates_and_origins_over_http(repo: Path, tmp_path: Path) -> None:
    commit(repo, {"people/leave.md": "# Leave\n\nLeave now needs four weeks notice.\n"}, "Four weeks notice", ago(2))
    commit(repo, {"engineering/deploys.md": "# Deploys\n\nDeploys need a ticket.\n"}, "Deploy tickets", ago(20))
    settings = make_settings(tmp_path / "db", cache_dir=str(tmp_path / "cache"))
    Writer(settings).run(repo.as_uri())
    head = git(repo, "rev-parse", "HEAD").strip()
    with LiveServer(settings) as server:
        week = ok(server, "get_recent_updates", {"days": 7})
        assert [(u["source"], u["subject"], u["title"]) for u in week["updates"]] == [
            ("people/leave.md", "Four weeks notice", "Leave")
        ]
        update = week["updates"][0]
        assert (
            update["source_ref"].startswith("doc://handbook/people/leave.md?version_id=")
            and update["topic"] == "people"
        )
        assert update["date"][:10] == ago(2)[:10]
        month = ok(server, "get_recent_updates", {"days": 21, "topic": "engineering"})
        assert [u["source"] for u in month["updates"]] == ["engineering/deploys.md"]
        assert "topic 'nope' is not a top-level folder" in error_text(server, "get_recent_updates", {"topic": "nope"})
        listed = ok(server, "qurio_list_sources", {})["sources"]
        assert [(s["id"], s["origin"], s["commit"], s["location"]) for s in listed] == [
            ("handbook", "git", head, repo.as_uri())
        ]
        collections = ok(server, "list_collections", {})["collections"]
        assert collections[0]["origin"] == "git" and collections[0]["commit"] == head and collections[0]["last_read_at"]


def test_the_command_line_reads_a_local_clone_at_a_ref(repo: Path, tmp_path: Path, onnx_cache: Path) -> None:
    env = job_env(THOTH_DB_URI=str(tmp_path / "db"))
    run = run_ingest("--source", str(repo), "--ref", "main", "--name", "hb", env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "source hb: 4 changed — 4 ingested" in run.stdout
    source = Store(make_settings(tmp_path / "db")).first(Source, {"source_id": "hb"})
    assert source is not None and source.uri == f"{repo.as_uri()}#main"  # what a scheduled re-run reads again
    bad = run_ingest("--source", str(tmp_path / "nowhere"), "--ref", "main", env=env)
    assert bad.returncode == 1 and "neither a git URL nor a local clone" in bad.stderr
