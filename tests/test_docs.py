"""docs/architecture.md's map of the code held to the tree: every module it names exists, every module in
thoth/ is named, and every dotted `thoth.` name it gives resolves. (README's settings table is held to
thoth.config by tests/test_config.py.)"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ARCHITECTURE = ROOT / "docs" / "architecture.md"


def _modules() -> list[Path]:
    return sorted(p for p in (ROOT / "thoth").rglob("*.py") if p.name != "__init__.py" and "__pycache__" not in p.parts)


def _text() -> str:
    return ARCHITECTURE.read_text()


@functools.cache
def _top_level_names(path: Path) -> frozenset[str]:
    names: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for target in targets for n in ast.walk(target) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    return frozenset(names)


def _resolves(dotted: str) -> bool:
    """`thoth.a.b` is a module or package, or a top-level name of one."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        base = ROOT.joinpath(*parts[:i])
        for path in (base.with_suffix(".py"), base / "__init__.py"):
            if path.is_file():
                rest = parts[i:]
                return not rest or rest[0] in _top_level_names(path)
    return False


def test_every_module_named_exists() -> None:
    text = _text()
    paths = set(re.findall(r"\b((?:thoth|ingest|tests|bench|scripts)/[\w/]+\.py)\b", text))
    assert sorted(p for p in paths if not (ROOT / p).is_file()) == []
    names = set(re.findall(r"`([\w]+\.py)`", text))
    known = {p.name for p in _modules()} | {p.name for p in (ROOT / "ingest").rglob("*.py")}
    assert sorted(names - known) == [], "named in docs/architecture.md, but no such module in thoth/ or ingest/"


def test_every_module_in_thoth_is_named() -> None:
    text = _text()
    named = set(re.findall(r"\b([\w]+)\.py\b", text)) | set(re.findall(r"\bthoth(?:\.\w+)+", text))
    unnamed = [
        str(p.relative_to(ROOT))
        for p in _modules()
        if p.stem not in named and ".".join(p.relative_to(ROOT).with_suffix("").parts) not in named
    ]
    assert unnamed == [], "modules docs/architecture.md does not name"


def test_every_dotted_name_resolves() -> None:
    dotted = {m.rstrip(".") for m in re.findall(r"(?<![\w/.])thoth(?:\.[A-Za-z_]\w*)+", _text())}
    assert sorted(d for d in dotted if not _resolves(d)) == []
