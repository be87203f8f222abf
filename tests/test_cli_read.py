"""`thoth ingest`, `search`, `sources`, `documents` and `status`, each run as a process against a small index."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import CORPUS, REPO_ROOT, job_env, write_corpus


def thoth(*args: str, db: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "thoth.cli", *args],
        cwd=REPO_ROOT,
        env=job_env(THOTH_DB_URI=str(db)),
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An index written by `thoth ingest`, the job's command under its new name."""
    corpus = write_corpus(tmp_path_factory.mktemp("corpus"))
    db = tmp_path_factory.mktemp("cli") / "db"
    result = thoth("ingest", "--source", str(corpus), "--name", "handbook", db=db)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.startswith(f"source handbook: {len(CORPUS) + 1} changed")
    return db


def test_search_prints_cited_hits_and_stable_json(db: Path) -> None:
    result = thoth("search", "how do I request sick leave", "-k", "2", "--json", db=db)
    assert result.returncode == 0, result.stderr
    body = json.loads(result.stdout)
    assert len(body["hits"]) == 2 and body["hits"][0]["key"] == "people/time-off.md"
    assert body["hits"][0]["source_ref"].startswith("doc://handbook/people/time-off.md")
    text = thoth("search", "how do I request sick leave", "--source", "handbook", db=db)
    assert text.returncode == 0 and "people/time-off.md" in text.stdout and not text.stdout.startswith("{")
    unknown = thoth("search", "sick leave", "--source", "nope", db=db)
    assert unknown.returncode == 2 and "nope" in unknown.stderr
    assert thoth("search", "sick leave", "-k", "0", db=db).returncode == 2


def test_sources_and_documents(db: Path) -> None:
    sources = json.loads(thoth("sources", "--json", db=db).stdout)
    [handbook] = [c for c in sources["collections"] if c["name"] == "handbook"]
    assert handbook["documents"] == len(CORPUS) + 1 and handbook["collection"] == "handbook"
    assert "handbook" in thoth("sources", db=db).stdout
    files = json.loads(thoth("documents", "handbook", "--json", db=db).stdout)["files"]
    assert sorted(f["key"] for f in files) == sorted([*CORPUS, "reports/quarterly.pdf"])
    assert "people/time-off.md" in thoth("documents", "handbook", db=db).stdout


def test_status_shows_health_tables_and_the_last_run(db: Path) -> None:
    body = json.loads(thoth("status", "--json", db=db).stdout)
    assert body["status"] == "ok" and body["tables"]["chunks"] > 0
    [run] = body["runs"]
    assert (run["trigger"], run["started_by"], run["added"]) == ("job", "thoth ingest run (task 1/1)", len(CORPUS) + 1)
    assert body["last_run"]["added"] == len(CORPUS) + 1
    text = thoth("status", db=db)
    assert text.returncode == 0 and "status: ok" in text.stdout and "thoth ingest run (task 1/1)" in text.stdout


def test_status_of_a_missing_index_fails(tmp_path: Path) -> None:
    result = thoth("status", db=tmp_path / "none")
    assert result.returncode == 1 and "status: unavailable" in result.stdout


def test_eval_figures_match_the_ones_computed_by_hand(db: Path, tmp_path: Path) -> None:
    # The first question's file is the top hit (test_search_...): rank 1, recall 1. The second expects a
    # file the index lacks: rank none, recall 0. The third expects both: recall 1/2, rank 1.
    # recall@3 = (1 + 0 + 1/2) / 3 = 0.5; MRR = (1 + 0 + 1) / 3 = 0.6667.
    questions = tmp_path / "questions.jsonl"
    lines = [
        {"question": "how do I request sick leave", "expected": ["people/time-off.md"], "source": "handbook"},
        {"question": "how do I request sick leave", "expected": ["people/nowhere.md"]},
        {"question": "how do I request sick leave", "expected": ["people/time-off.md", "people/nowhere.md"]},
    ]
    questions.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    result = thoth("eval", str(questions), "-k", "3", "--json", db=db)
    assert result.returncode == 0, result.stderr
    body = json.loads(result.stdout)
    assert (body["k"], body["questions"], body["recall_at_k"], body["mrr"]) == (3, 3, 0.5, 0.6667)
    assert [m["missing"] for m in body["misses"]] == [["people/nowhere.md"], ["people/nowhere.md"]]
    assert body["misses"][0]["got"][0] == "people/time-off.md"
    text = thoth("eval", str(questions), "-k", "3", "--source", "handbook", db=db)
    assert "3 questions: recall@3 0.500, MRR 0.667" in text.stdout and text.stdout.count("miss:") == 2
    assert thoth("eval", str(questions), "--fail-under", "0.9", db=db).returncode == 1
    questions.write_text('{"question": "no files"}\n')
    bad = thoth("eval", str(questions), db=db)
    assert bad.returncode == 2 and "questions.jsonl:1" in bad.stderr
