"""Workshop repositories laid out like the Epic Web workshops -> units -> sections in reading order
(docs/workshops.md, "Ingest a workshop"). A unit's bytes are its files serialised in a fixed order, so its
document id changes exactly when one of its files does, and the writer plans units as it does files."""

from __future__ import annotations

import difflib
import json
import re
from collections import Counter
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path, PurePosixPath

from thoth.formats import CODE_LANGUAGES
from thoth.writes.parsers import Block, ParsedDocument, ParseError, RawFile, Section, markdown

# A new magic changes every unit's bytes, so units of an older format are parsed again on the next ingest
MAGIC = b"THOTH-WORKSHOP-UNIT 2\n"
MAX_FILE_BYTES = 200_000  # larger files (bundles, fixtures, images) are not learning material
DIFFIGNORE = "epicshop/.diffignore"
GITIGNORE = ".gitignore"  # the workshop app hides what the repository ignores, too
# What the workshop app hides from diffs whatever the repository says (its own list: lock files,
# editor folders, databases, epicshop's folder), plus tests and tool configuration, which teach nothing
# about the step and would crowd out what does.
DEFAULT_DIFFIGNORE = (
    "package-lock.json", ".DS_Store", ".vscode", ".idea", ".git", "*.db", "epicshop",
    "*.test.*", "*.spec.*", "__tests__", "tests", "test", "e2e",  # tests
    "yarn.lock", "pnpm-lock.yaml", "bun.lock", "bun.lockb", "npm-shrinkwrap.json", "*.lock",  # lock files
    "*.config.*", "tsconfig*.json", "jsconfig.json", ".eslintrc*", ".prettierrc*", ".babelrc*",  # configuration
)  # fmt: skip
LEFT_OUT_NAMES = {"package-lock.json", ".DS_Store", "node_modules"}  # never content, never diffed
NOTE_STEMS = ("README", "FINISHED")  # notes files: their own sections, never code or diffs

_EXERCISE = re.compile(r"^(\d+)\.(.+)$")
_STEP = re.compile(r"^(\d+)\.(problem|solution)(?:\.(.+))?$")
_UNIT_KEY = re.compile(r"^exercises(?:/(\d+)\.([^/]+)(?:/(\d+))?)?$")

# a workshop's code (thoth/writes/parsers/code.py's languages), markup and configuration files
LANGUAGES = CODE_LANGUAGES | {
    ".css": "css", ".html": "html", ".json": "json", ".md": "markdown", ".mdx": "mdx", ".yml": "yaml",
    ".yaml": "yaml", ".toml": "toml", ".prisma": "prisma",
}  # fmt: skip


@dataclass(frozen=True)
class WorkshopInfo:
    title: str
    product: str | None


@dataclass(frozen=True)
class Unit:
    key: str
    anchor: str  # the path (relative to the root) the unit's file:// URI points at
    files: tuple[str, ...]  # paths relative to the root, sorted


def is_workshop(root: Path) -> bool:
    return (root / "exercises").is_dir()


def language_of(path: str) -> str:
    return LANGUAGES.get(PurePosixPath(path).suffix.lower(), "")


# -- the workshop's metadata --------------------------------------------------------


def info(root: Path) -> WorkshopInfo:
    """Title and product from package.json's `epicshop` block, else the top-level README's heading."""
    title: str | None = None
    product: str | None = None
    try:
        epicshop = json.loads((root / "package.json").read_text("utf-8")).get("epicshop") or {}
    except (OSError, ValueError, AttributeError):
        epicshop = {}
    if isinstance(epicshop, dict):
        title = epicshop.get("title") if isinstance(epicshop.get("title"), str) else None
        meta = epicshop.get("product") if isinstance(epicshop.get("product"), dict) else {}
        product = next((str(meta[k]) for k in ("displayNameShort", "host", "slug") if meta.get(k)), None)
    if not title:
        readme = next((p for p in (root / "README.md", root / "README.mdx") if p.is_file()), None)
        if readme is not None:
            match = re.search(r"^#\s+(.+?)\s*#*\s*$", readme.read_text("utf-8", errors="replace"), re.MULTILINE)
            title = match.group(1) if match else None
    return WorkshopInfo(title=(title or root.name).strip(), product=product)


# -- listing units -------------------------------------------------------------------


def _numbered(folder: Path, pattern: re.Pattern[str]) -> list[tuple[int, Path, re.Match[str]]]:
    found = []
    for path in folder.iterdir() if folder.is_dir() else []:
        match = pattern.match(path.name)
        if path.is_dir() and match:
            found.append((int(match.group(1)), path, match))
    return sorted(found, key=lambda item: (item[0], item[1].name))


def _notes(folder: Path, root: Path) -> list[str]:
    out = []
    for stem in NOTE_STEMS:
        path = next((folder / f"{stem}{ext}" for ext in (".mdx", ".md") if (folder / f"{stem}{ext}").is_file()), None)
        if path is not None:
            out.append(path.relative_to(root).as_posix())
    return out


def ignore_patterns(diffignore: str, gitignore: str) -> list[str]:
    """The patterns a step's files are checked against: the defaults, then the workshop's own lists."""
    return [*DEFAULT_DIFFIGNORE, *diffignore.splitlines(), *gitignore.splitlines()]


def _root_patterns(root: Path) -> tuple[list[str], list[str]]:
    """(patterns, the files they came from, relative to the root) for a workshop folder."""
    texts = {
        name: (root / name).read_text("utf-8", errors="replace")
        for name in (DIFFIGNORE, GITIGNORE)
        if (root / name).is_file()
    }
    return ignore_patterns(texts.get(DIFFIGNORE, ""), texts.get(GITIGNORE, "")), sorted(texts)


def _content_files(folder: Path, root: Path, patterns: list[str]) -> list[str]:
    """The files of a step folder a reader should see: not hidden, not huge, not ignored (notes always kept)."""
    files = []
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if any(part.startswith(".") or part in LEFT_OUT_NAMES for part in rel.parts) or not path.is_file():
            continue
        is_note = len(rel.parts) == 1 and _note_kind(rel.as_posix()) != ""
        if not is_note and _diff_ignored(rel.as_posix(), patterns):
            continue
        if path.stat().st_size > MAX_FILE_BYTES:
            continue
        files.append(path.relative_to(root).as_posix())
    return files


def units(root: Path) -> list[Unit]:
    """The workshop's units in reading order (workshop notes, then per exercise its notes and steps)."""
    exercises = root / "exercises"
    found: list[Unit] = []
    if notes := _notes(exercises, root):
        found.append(Unit("exercises", "exercises", tuple(notes)))
    patterns, ignore_files = _root_patterns(root)
    for _, folder, _ in _numbered(exercises, _EXERCISE):
        key = f"exercises/{folder.name}"
        if notes := _notes(folder, root):
            found.append(Unit(key, key, tuple(notes)))
        steps: dict[int, list[tuple[str, Path]]] = {}
        for step, step_folder, match in _numbered(folder, _STEP):
            steps.setdefault(step, []).append((match.group(2), step_folder))
        for step, sides in sorted(steps.items()):
            files = [f for _, step_folder in sides for f in _content_files(step_folder, root, patterns)]
            if files:
                anchor = min(sides, key=lambda side: (side[0] != "problem", side[1].name))[1]  # the problem first
                anchor_key = anchor.relative_to(root).as_posix()
                found.append(Unit(f"{key}/{step:02d}", anchor_key, tuple(sorted(files + ignore_files))))
    return found


def bundle(root: Path, unit: Unit) -> bytes:
    """The unit's bytes: a header naming each file and its size, then the files' bytes in that order."""
    contents = [(path, (root / path).read_bytes()) for path in unit.files]
    header = {"key": unit.key, "files": [[path, len(data)] for path, data in contents]}
    return MAGIC + json.dumps(header, sort_keys=True).encode() + b"\n" + b"".join(data for _, data in contents)


def unbundle(data: bytes) -> tuple[str, dict[str, bytes]]:
    if not data.startswith(MAGIC):
        raise ParseError("not a workshop unit")
    newline = data.index(b"\n", len(MAGIC))
    try:
        header = json.loads(data[len(MAGIC) : newline])
    except ValueError as exc:
        raise ParseError(f"corrupt workshop unit header: {exc}") from None
    files, offset = {}, newline + 1
    for path, size in header["files"]:
        files[path] = data[offset : offset + size]
        offset += size
    return header["key"], files


# -- sections ---------------------------------------------------------------------------


def _text(data: bytes) -> str | None:
    """The file as text, or None for a binary file (NUL bytes or not UTF-8)."""
    if b"\x00" in data[:8192]:
        return None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None


def _note_section(
    path: str, data: bytes, kind: str, heading: list[str], ex: int | None, step: int | None, hidden: Counter
) -> Section | None:
    """A README/FINISHED file as one section: stored as written (less front matter and what a reader never
    sees), chunked as Markdown; what was left out is counted in `hidden`."""
    text = _text(data)
    if text is None:
        raise ParseError(f"{path}: not UTF-8 text")
    body = markdown.readable(text)
    if not body:
        return None
    blocks: list[Block] = []
    try:
        parsed = markdown.parse(text, fallback_title=heading[-1])
        hidden.update(parsed.hidden_dropped)
        for part in parsed.sections:
            if part.heading_path:
                blocks.append(Block(part.heading_path[-1]))
            blocks.extend(part.blocks)
    except ParseError:
        return None
    return Section(kind, blocks, heading, exercise_number=ex, step_number=step, path=path, body=body)


def _diff_ignored(path: str, patterns: list[str]) -> bool:
    """gitignore-style patterns, simplified: a pattern matches the path, a leading part of it, or a name in it
    (`**/` in front and `/**` behind are dropped; `!` negation is not supported)."""
    parts = path.split("/")
    names = parts + ["/".join(parts[: i + 1]) for i in range(len(parts))]
    for raw in patterns:
        pattern = raw.strip()
        if not pattern or pattern.startswith(("#", "!")):
            continue
        pattern = pattern.strip("/")
        while pattern.startswith("**/"):
            pattern = pattern[3:]
        pattern = pattern.removesuffix("/**")
        if pattern and any(fnmatch(name, pattern) for name in names):
            return True
    return False


def _unified(path: str, before: str | None, after: str | None) -> str:
    lines = difflib.unified_diff(
        (before or "").splitlines(),
        (after or "").splitlines(),
        fromfile=f"problem/{path}" if before is not None else "/dev/null",
        tofile=f"solution/{path}" if after is not None else "/dev/null",
        lineterm="",
    )
    return "\n".join(lines)


def _step_sections(exercise: str, ex: int, step: int, files: dict[str, bytes], hidden: Counter) -> list[Section]:
    sides: dict[str, dict[str, bytes]] = {"problem": {}, "solution": {}}  # path inside the step folder -> bytes
    folders: dict[str, str] = {}  # side -> its folder, e.g. 01.problem.memo-fn
    for path, data in files.items():
        parts = path.split("/")
        match = _STEP.match(parts[2]) if len(parts) >= 4 and parts[1] == exercise else None
        if match and int(match.group(1)) == step:
            sides[match.group(2)]["/".join(parts[3:])] = data
            folders.setdefault(match.group(2), parts[2])
    slugs = [_STEP.match(folders[side]).group(3) for side in ("problem", "solution") if side in folders]  # type: ignore[union-attr]
    slug = next((s for s in slugs if s), "")
    step_label = f"Step {step}: {slug}" if slug else f"Step {step}"
    title = _EXERCISE.match(exercise).group(2)  # type: ignore[union-attr]

    def heading(label: str) -> list[str]:
        return [title, step_label, label]

    def file_section(kind: str, block: Block, label: str, path: str) -> Section:
        """A code, diff-summary or diff section of the step; `path` is below the exercise's folder."""
        where, diff, text = f"exercises/{exercise}/{path}", block.kind == "diff", block.text
        return Section(
            kind, [block], heading(label), exercise_number=ex, step_number=step, path=where, is_diff=diff, body=text
        )

    sections: list[Section] = []
    for side in ("problem", "solution"):
        note = next((p for p in sorted(sides[side]) if "/" not in p and _note_kind(p) == "instructions"), None)
        if note is not None:
            path = f"exercises/{exercise}/{folders[side]}/{note}"
            label = f"{side.title()} instructions"
            section = _note_section(path, sides[side][note], f"{side}-instructions", heading(label), ex, step, hidden)
            if section is not None:
                sections.append(section)
    patterns = ignore_patterns(_text(files.get(DIFFIGNORE, b"")) or "", _text(files.get(GITIGNORE, b"")) or "")
    texts: dict[str, dict[str, str]] = {"problem": {}, "solution": {}}
    for side in ("problem", "solution"):
        for path in sorted(sides[side]):
            text = _text(sides[side][path])
            if text is None or _note_kind(path) or _diff_ignored(path, patterns):
                continue  # binary files, notes and what the workshop hides are not code to read
            texts[side][path] = text
            if text.strip():
                block, label = Block(text.rstrip(), kind="code", language=language_of(path)), f"{side.title()} code"
                sections.append(file_section(f"{side}-code", block, f"{label}: {path}", f"{folders[side]}/{path}"))
    if not (sides["problem"] and sides["solution"]):
        return sections  # a step with one side has nothing to diff
    before, after = texts["problem"], texts["solution"]
    changes: list[tuple[str, str]] = []
    for path in sorted(set(before) | set(after)):
        if before.get(path) != after.get(path):
            changes.append(("added" if path not in before else "removed" if path not in after else "modified", path))
    if not changes:
        return sections
    summary = "\n".join(f"{change} {path}" for change, path in changes)
    # the summary's path is the folder the changes lead to
    sections.append(file_section("diff-summary", Block(summary, kind="diff"), "Diff summary", folders["solution"]))
    for change, path in changes:
        diff = _unified(path, before.get(path), after.get(path))
        side = "problem" if change == "removed" else "solution"  # the file the diff came from
        block = Block(diff, kind="diff", language=language_of(path))
        sections.append(file_section("diff", block, f"Diff: {path}", f"{folders[side]}/{path}"))
    return sections


def _notes_sections(
    files: dict[str, bytes], scope: str, heading: list[str], ex: int | None, hidden: Counter
) -> list[Section]:
    sections = []
    for path in sorted(files, key=lambda p: NOTE_STEMS.index(PurePosixPath(p).stem.upper())):
        kind = _note_kind(path)
        label = f"{scope.title()} {'finished notes' if kind == 'finished' else 'instructions'}"
        section = _note_section(path, files[path], f"{scope}-{kind}", [*heading, label], ex, None, hidden)
        if section is not None:
            sections.append(section)
    return sections


def read(file: RawFile) -> ParsedDocument:
    return parse(file.data)


def parse(data: bytes) -> ParsedDocument:
    """One unit's bytes -> its sections (partitions) in reading order."""
    unit_key, files = unbundle(data)
    match = _UNIT_KEY.match(unit_key)
    if match is None:
        raise ParseError(f"not a workshop unit key: {unit_key!r}")
    ex_text, exercise_title, step_text = match.groups()
    hidden: Counter[str] = Counter()
    if ex_text is None:  # the workshop's own notes; the title is the instructions' first heading
        sections = _notes_sections(files, "workshop", [], None, hidden)
        first = re.search(r"^#\s+(.+?)\s*$", sections[0].text, re.MULTILINE) if sections else None
        title = first.group(1) if first else "Workshop"
    elif step_text is None:  # an exercise's notes
        sections = _notes_sections(files, "exercise", [exercise_title], int(ex_text), hidden)
        title = exercise_title
    else:
        sections = _step_sections(unit_key.split("/")[1], int(ex_text), int(step_text), files, hidden)
        title = exercise_title
    if not sections:
        raise ParseError("no content (empty notes, or only binary code files)")
    return ParsedDocument(title=title, sections=sections, hidden_dropped=dict(hidden))


def _note_kind(path: str) -> str:
    """'instructions' for README.*, 'finished' for FINISHED.* (Markdown/MDX), '' for anything else."""
    pure = PurePosixPath(path)
    if pure.suffix.lower() not in (".md", ".mdx") or pure.stem.upper() not in NOTE_STEMS:
        return ""
    return "finished" if pure.stem.upper() == "FINISHED" else "instructions"
