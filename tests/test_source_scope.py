"""Scope for every source (issue 52): a path inside a git repository, include and exclude globs, recorded
with the collection so every later run applies them."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import job_env, make_settings, run_ingest
from thoth.records import Chunk, Document, Source
from thoth.source_spec import ScopeError, SourceSpec, glob_regex
from thoth.store import Store
from thoth.writes.writer import Writer

ENV = {"GIT_AUTHOR_NAME": "Ann", "GIT_AUTHOR_EMAIL": "ann@example.com", "GIT_COMMITTER_NAME": "Ann"}
ENV |= {"GIT_COMMITTER_EMAIL": "ann@example.com"}

FILES = {
    "README.md": "# Product\n\nThe repository's front page.\n",
    "src/app.py": "def main():\n    return 'app'\n",
    "docs/index.md": "# Docs home\n\nStart here to learn the product.\n",
    "docs/guide/install.md": "# Install\n\nInstall the agent with the package manager.\n",
    "docs/guide/notes.txt": "Plain notes that are not Markdown.\n",
    "docs/blog/launch.md": "# Launch\n\nWe launched the product today.\n",
    "docs/fr/index.md": "# Accueil\n\nCommencez ici.\n",
}
WANTED = ["docs/fr/index.md", "docs/guide/install.md", "docs/index.md"]


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, **ENV}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "product"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    for path, text in FILES.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "start")
    return root


def keys(settings, source_id: str) -> list[str]:
    return sorted(d.key for d in Store(settings).find(Document, {"source_id": source_id}, fields=["key"]))


def test_globs() -> None:
    assert glob_regex("**/*.md").match("docs/a/b.md") and glob_regex("**/*.md").match("b.md")
    assert glob_regex("docs/blog/**").match("docs/blog/x/y.md") and not glob_regex("docs/blog/**").match("docs/b.md")
    assert glob_regex("*.md").match("deep/er/x.md")  # no slash: the name at any depth
    assert not glob_regex("docs/*.md").match("docs/a/b.md")  # * never crosses a folder
    assert glob_regex("/blog/**").match("blog/2024/post")  # a leading slash is the root
    assert glob_regex("docs/[ab].md").match("docs/a.md") and not glob_regex("docs/[!ab].md").match("docs/a.md")
    spec = SourceSpec.parse("https://x.example.com/repo.git#v2:docs/en/")
    assert (spec.kind, spec.ref, spec.path, spec.uri) == (
        "git",
        "v2",
        "docs/en",
        "https://x.example.com/repo.git#v2:docs/en",
    )
    with pytest.raises(ScopeError, match="path must be a folder"):
        SourceSpec.parse("https://x.example.com/repo.git", path="../etc")
    with pytest.raises(ScopeError, match="include: each pattern must be a non-empty glob"):
        SourceSpec.parse("/tmp", include=[""])


def test_git_path_include_exclude_recorded_and_reapplied(repo: Path, tmp_path: Path, onnx_cache: Path) -> None:
    db = tmp_path / "db"
    env = job_env(THOTH_DB_URI=str(db), THOTH_CACHE_DIR=str(onnx_cache), THOTH_TREES="off")
    args = ("--source", str(repo), "--path", "docs", "--include", "**/*.md", "--exclude", "docs/blog/**")
    done = run_ingest(*args, env=env)
    assert done.returncode == 0, done.stderr
    settings = make_settings(db)
    assert keys(settings, "product") == WANTED  # the path inside the repository is kept in the keys
    source = Store(settings).first(Source, {"source_id": "product"})
    assert source.uri == f"{repo.as_uri()}#:docs" and source.include == ("**/*.md",)
    assert source.exclude == ("docs/blog/**",)
    refs = {c.source_ref.split("#")[0] for c in Store(settings).find(Chunk, {"source_id": "product"})}
    assert {r.split("/", 3)[3].split("?")[0] for r in refs} == set(WANTED)  # citations keep the repository path

    # a new commit adds a file in scope and one out of it; the re-run without arguments applies the recorded scope
    (repo / "docs/guide/upgrade.md").write_text("# Upgrade\n\nUpgrade the agent in place.\n")
    (repo / "docs/blog/second.md").write_text("# Second post\n\nAnother post.\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "more")
    again = run_ingest("--source", str(repo), env=env)
    assert again.returncode == 0, again.stderr
    assert keys(settings, "product") == sorted([*WANTED, "docs/guide/upgrade.md"])
    missing = run_ingest("missing", "--source", str(repo), env=env)
    assert missing.returncode == 0 and keys(settings, "product") == sorted([*WANTED, "docs/guide/upgrade.md"])

    # a run given a scope replaces the recorded one: the French pages go
    narrower = run_ingest(
        "--source", str(repo), "--path", "docs", "--exclude", "docs/fr/**", "--exclude", "**/blog/**", env=env
    )
    assert narrower.returncode == 0, narrower.stderr
    assert keys(settings, "product") == [
        "docs/guide/install.md",
        "docs/guide/notes.txt",
        "docs/guide/upgrade.md",
        "docs/index.md",
    ]
    assert Store(settings).first(Source, {"source_id": "product"}).include == ()

    bad = run_ingest("--source", str(repo), "--include", "", env=env)
    assert bad.returncode == 2 and "include: each pattern must be a non-empty glob" in bad.stderr


def test_folder_scope_and_reingest(tmp_path: Path) -> None:
    folder = tmp_path / "handbook"
    for path, text in FILES.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text)
    settings = make_settings(tmp_path / "db", tree_build=False)
    spec = SourceSpec.parse(str(folder), include=["docs/**"], exclude=["**/fr/**", "*.txt"])
    first = Writer(settings).run(spec)
    assert sorted(first.ingested) == ["docs/blog/launch.md", "docs/guide/install.md", "docs/index.md"]
    (folder / "docs/fr/new.md").write_text("# Nouveau\n\nUne page.\n")
    (folder / "docs/guide/new.md").write_text("# New\n\nA new page.\n")
    again = Writer(settings).run(str(folder))  # given no scope: the recorded one
    assert again.ingested == ["docs/guide/new.md"] and again.removed == []
