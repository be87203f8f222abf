"""Git sources (docs/sources.md, "A git repository"): a bare mirror under THOTH_CACHE_DIR/git, its files listed
from a commit's tree, each versioned by the last commit that changed it (one `git log` walk, only the new
commits on a re-run). A private repository's token reaches git through GIT_CONFIG_* variables: never on a
command line, never logged."""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
import subprocess
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

from thoth.config import Settings
from thoth.source_spec import SourceSpec, shown_location
from thoth.writes.objects import SourceError, SourceObject, is_sidecar
from thoth.writes.parsers import is_supported

log = logging.getLogger("thoth.ingest")

GIT_TIMEOUT_SECONDS = 600  # a clone of a large repository; each later command is much faster
MIRRORED_REFS = ("+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*")  # what a fetch brings up to date


@dataclass(frozen=True)
class Change:
    """The last commit that changed a file."""

    commit: str
    date: str  # ISO 8601, the committer's date
    subject: str


@dataclass
class GitRead:
    url: str
    ref: str
    commit: str
    objects: list[SourceObject]
    changes: dict[str, Change]  # key -> its last change

    def state_json(self) -> str:
        files = {k: [c.commit, c.date, c.subject] for k, c in sorted(self.changes.items())}
        read_at = datetime.now(UTC).isoformat()
        return json.dumps({"url": self.url, "ref": self.ref, "commit": self.commit, "read_at": read_at, "files": files})


def _mirrors(settings: Settings) -> Path:
    """Where mirrors live: THOTH_CACHE_DIR/git, or the temp folder where that is read-only (the image's)."""
    root = Path(settings.cache_dir).expanduser().resolve() / "git"
    try:
        root.mkdir(parents=True, exist_ok=True)
        if os.access(root, os.W_OK):
            return root
    except OSError:
        pass
    fallback = Path(tempfile.gettempdir()) / "thoth-git"
    fallback.mkdir(parents=True, exist_ok=True)
    return fallback


class Repo:
    """A bare mirror of one remote, driven through the git command line."""

    def __init__(self, settings: Settings, url: str):
        self.url = url
        digest = hashlib.sha256(url.encode()).hexdigest()[:16]
        self.path = _mirrors(settings) / digest
        self.env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true", "LC_ALL": "C"}
        self._secret = settings.git_token.strip()
        if self._secret and urlsplit(url).scheme in ("http", "https"):
            basic = base64.b64encode(f"x-access-token:{self._secret}".encode()).decode()
            self.env |= {
                "GIT_CONFIG_COUNT": "1",
                "GIT_CONFIG_KEY_0": "http.extraHeader",
                "GIT_CONFIG_VALUE_0": f"Authorization: Basic {basic}",
            }

    def git(self, *args: str, cwd: Path | None = None) -> str:
        return self.output(*args, cwd=cwd).decode("utf-8", "replace")

    def output(self, *args: str, cwd: Path | None = None) -> bytes:
        """What a git command writes to stdout; a SourceError (the token never in it) when it fails."""
        try:
            done = subprocess.run(
                ["git", *args], cwd=cwd or self.path, env=self.env, capture_output=True, timeout=GIT_TIMEOUT_SECONDS
            )
        except FileNotFoundError:
            raise SourceError("git sources need the git command line (apt-get install git)") from None
        except subprocess.TimeoutExpired:
            raise SourceError(f"git {args[0]} did not finish in {GIT_TIMEOUT_SECONDS}s") from None
        if done.returncode != 0:
            message = done.stderr.decode("utf-8", "replace").strip().splitlines()
            text = message[-1] if message else f"exit status {done.returncode}"
            message = f"git {args[0]} failed for {shown_location(self.url)}: {text}"
            raise SourceError(message.replace(self._secret, "***") if self._secret else message)
        return done.stdout

    def sync(self) -> None:
        if (self.path / "HEAD").exists():
            self.git("fetch", "--quiet", "--prune", "--force", "origin", *MIRRORED_REFS)
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.git("clone", "--quiet", "--bare", self.url, str(self.path), cwd=self.path.parent)

    def resolve(self, ref: str) -> str:
        try:
            return self.git("rev-parse", "--verify", "--quiet", f"{ref or 'HEAD'}^{{commit}}").strip()
        except SourceError:
            raise SourceError(
                f"ref {ref or 'HEAD'!r} is not a branch, tag or commit of {shown_location(self.url)}"
            ) from None

    def files(self, commit: str) -> dict[str, tuple[str, int]]:
        """path -> (blob sha, size) of the files Thoth reads in `commit`'s tree."""
        out = {}
        for entry in self.git("ls-tree", "-r", "-z", "--long", commit).split("\0"):
            if not entry:
                continue
            meta, path = entry.split("\t", 1)
            mode, kind, sha, size = meta.split()
            hidden = any(part.startswith(".") for part in path.split("/"))
            if kind == "blob" and mode != "120000" and not hidden and (is_supported(path) or is_sidecar(path)):
                out[path] = (sha, int(size))
        return out

    def last_changes(self, commit: str, paths: set[str], since: str = "") -> dict[str, Change]:
        """The last commit that changed each of `paths`, walking back from `commit` (to `since`, excluded)."""
        found: dict[str, Change] = {}
        span = f"{since}..{commit}" if since else commit
        out = self.git("log", "--no-renames", "--name-only", "-z", "--format=%x1e%H%x1f%cI%x1f%s", span)
        for record in out.split("\x1e"):
            if not record.strip("\0\n"):
                continue
            head, _, names = record.partition("\0")  # `hash␟date␟subject` NUL, then the names NUL-separated
            sha, date, subject = (head.split("\x1f") + ["", ""])[:3]
            for name in names.strip("\0\n").split("\0"):
                if name in paths and name not in found:
                    found[name] = Change(sha, date, subject)
            if len(found) == len(paths):
                break
        return found

    def blob(self, sha: str) -> bytes:
        return self.output("cat-file", "blob", sha)


def _browse_url(url: str, commit: str, path: str) -> str:
    """Where a person reads the file: the forge's blob URL for an https remote, else the repository URL."""
    if url.startswith(("http://", "https://")):
        base = url[:-4] if url.endswith(".git") else url
        return f"{base.rstrip('/')}/blob/{commit}/{path}"
    return f"{url}#{path}"


def _name_status(out: str) -> list[str]:
    """`git diff --name-status -z` as lines: `M path`, `D path`, `R old -> new`."""
    tokens, lines = [t for t in out.split("\0") if t], []
    while tokens:
        status = tokens.pop(0)
        if status[:1] in ("R", "C") and len(tokens) >= 2:
            lines.append(f"{status[0]} {tokens.pop(0)} -> {tokens.pop(0)}")
        elif tokens:
            lines.append(f"{status[0]} {tokens.pop(0)}")
    return lines


def read(spec: SourceSpec, settings: Settings, previous: dict) -> GitRead:
    """Mirror the repository, resolve the ref and list its files in scope, each versioned by its last change."""
    url, ref = spec.location, spec.ref
    repo = Repo(settings, url)
    repo.sync()
    commit = repo.resolve(ref)
    files = {path: blob for path, blob in repo.files(commit).items() if spec.wants(path)}
    old_commit = str(previous.get("commit") or "")
    known = {k: Change(*v) for k, v in (previous.get("files") or {}).items() if isinstance(v, list) and len(v) == 3}
    since = ""
    changed_paths: list[str] = []
    if old_commit and previous.get("url") == url:
        try:
            repo.git("merge-base", "--is-ancestor", old_commit, commit)
            since = old_commit  # a fast-forward: only the new commits say what changed
            changed_paths = _name_status(repo.git("diff", "--name-status", "-M", "-z", old_commit, commit))
        except SourceError:
            since = ""  # another branch, or history rewritten: walk the whole history
    changes = repo.last_changes(commit, set(files), since) if files else {}
    if since:
        changes = {**{k: c for k, c in known.items() if k in files}, **changes}
        missing = set(files) - set(changes)
        if missing:  # files the state did not know (an older Thoth): walk back for them
            changes |= repo.last_changes(commit, missing)
    objects = [
        SourceObject(
            key=path,
            uri=_browse_url(url, commit, path),
            size=size,
            read=lambda sha=sha: repo.blob(sha),
            version=changes[path].commit if path in changes else commit,
            fingerprint=f"git:{sha}",
        )
        for path, (sha, size) in sorted(files.items())
    ]
    scope = f" ({spec.describe()})" if spec.scoped else ""
    log.info("git %s at %s (%s): %d files%s", shown_location(url), ref or "HEAD", commit[:12], len(objects), scope)
    if since:  # what git says changed since the last run: the plan re-reads exactly these (and renames' targets)
        log.info("since %s: %s", since[:12], "; ".join(changed_paths) or "no file changed")
    return GitRead(url, ref, commit, objects, changes)
