"""The workshop parser on its own: layout -> units -> sections, metadata, diffs, odd files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import WORKSHOP
from thoth.writes.parsers import WORKSHOP_FORMAT, ParseError, workshop
from thoth.writes.source_files import list_folder


def write(root: Path, files: dict[str, str | bytes]) -> Path:
    for key, content in files.items():
        path = root / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return root


def test_units_in_reading_order_with_workshop_metadata() -> None:
    keys = [obj.key for obj in list_folder(str(WORKSHOP))]
    assert keys == [
        "exercises",
        "exercises/01.memoization",
        "exercises/01.memoization/01",
        "exercises/01.memoization/02",
        "exercises/02.http-caching",
        "exercises/02.http-caching/01",
        "exercises/03.error-handling",
        "exercises/03.error-handling/01",
    ]
    assert all(obj.format == WORKSHOP_FORMAT for obj in list_folder(str(WORKSHOP)))
    assert workshop.info(WORKSHOP) == workshop.WorkshopInfo("Caching Fundamentals", "Epic Web")


@pytest.mark.parametrize(
    ("package", "readme", "expected"),
    [
        ({"epicshop": {"title": "T", "product": {"host": "h.dev", "slug": "s"}}}, None, ("T", "h.dev")),
        ({"epicshop": {"product": {"slug": "s"}}}, "# From README\n", ("From README", "s")),
        (None, None, ("plain-folder", None)),
        ("{not json", None, ("plain-folder", None)),
    ],
)
def test_info_fallbacks(tmp_path: Path, package: object, readme: str | None, expected: tuple) -> None:
    root = tmp_path / "plain-folder"
    (root / "exercises").mkdir(parents=True)
    if package is not None:
        (root / "package.json").write_text(package if isinstance(package, str) else json.dumps(package))
    if readme:
        (root / "README.md").write_text(readme)
    assert workshop.info(root) == workshop.WorkshopInfo(*expected)


def test_step_sections_slugless_folders_diffignore_and_binary_files(tmp_path: Path) -> None:
    root = write(
        tmp_path / "ws",
        {
            "epicshop/.diffignore": "# comment\n*.lock\n",
            "exercises/01.basics/01.problem/README.md": "# Do it\n\nWrite `add`.\n",
            "exercises/01.basics/01.problem/add.js": "export const add = () => 0\n",
            "exercises/01.basics/01.problem/yarn.lock": "a\n",
            "exercises/01.basics/01.problem/image.bin": b"\x00\x01\x02",
            "exercises/01.basics/01.problem/package-lock.json": "{}",
            "exercises/01.basics/01.solution/add.js": "export const add = (a, b) => a + b\n",
            "exercises/01.basics/01.solution/yarn.lock": "b\n",
            "exercises/01.basics/01.solution/.env": "SECRET=1\n",
            "exercises/01.basics/02.problem.only/todo.py": "print('todo')\n",
        },
    )
    objects = {obj.key: obj for obj in list_folder(str(root))}
    assert list(objects) == ["exercises/01.basics/01", "exercises/01.basics/02"]
    step = workshop.parse(objects["exercises/01.basics/01"].read())
    assert step.title == "basics"
    kinds = [(p.kind, p.path) for p in step.sections]
    assert kinds == [  # yarn.lock is hidden by the workshop's defaults (and *.lock by its .diffignore)
        ("problem-instructions", "exercises/01.basics/01.problem/README.md"),
        ("problem-code", "exercises/01.basics/01.problem/add.js"),
        ("solution-code", "exercises/01.basics/01.solution/add.js"),
        ("diff-summary", "exercises/01.basics/01.solution"),
        ("diff", "exercises/01.basics/01.solution/add.js"),
    ]
    assert step.sections[0].heading_path == ["basics", "Step 1", "Problem instructions"]
    assert step.sections[-2].text == "modified add.js"
    diff = step.sections[-1]
    assert diff.is_diff and diff.blocks[0].kind == "diff" and diff.blocks[0].language == "javascript"
    assert "-export const add = () => 0" in diff.text and "+export const add = (a, b) => a + b" in diff.text
    only = workshop.parse(objects["exercises/01.basics/02"].read())
    assert [p.kind for p in only.sections] == ["problem-code"]  # one side: nothing to diff
    assert only.sections[0].heading_path[1] == "Step 2: only"


def test_unit_bytes_change_exactly_when_a_file_does(tmp_path: Path) -> None:
    root = write(tmp_path / "ws", {"exercises/01.a/01.problem/x.ts": "1", "exercises/01.a/01.solution/x.ts": "2"})
    before = list_folder(str(root))[0].read()
    assert list_folder(str(root))[0].read() == before
    (root / "exercises/01.a/01.solution/x.ts").write_text("3")
    assert list_folder(str(root))[0].read() != before
    key, files = workshop.unbundle(before)
    assert key == "exercises/01.a/01" and files["exercises/01.a/01.solution/x.ts"] == b"2"


def test_unreadable_notes_and_empty_units_are_parse_errors(tmp_path: Path) -> None:
    root = write(
        tmp_path / "ws", {"exercises/README.mdx": b"# Hi \xff\xfe", "exercises/01.a/README.mdx": "import x from 'y'\n"}
    )
    objects = {obj.key: obj for obj in list_folder(str(root))}
    with pytest.raises(ParseError, match="UTF-8"):
        workshop.parse(objects["exercises"].read())
    with pytest.raises(ParseError, match="no content"):
        workshop.parse(objects["exercises/01.a"].read())
    with pytest.raises(ParseError):
        workshop.parse(b"not a unit")


def test_hidden_files_stay_out_of_units_so_changing_them_changes_nothing(tmp_path: Path) -> None:
    root = write(
        tmp_path / "ws",
        {
            "epicshop/.diffignore": "**/fixtures/**\n",
            ".gitignore": "/dist\n",
            "exercises/01.a/01.problem/src/x.ts": "1",
            "exercises/01.a/01.solution/src/x.ts": "2",
            "exercises/01.a/01.solution/src/x.test.ts": "test('x')",
            "exercises/01.a/01.solution/tests/e2e.spec.ts": "test('e2e')",
            "exercises/01.a/01.solution/fixtures/data.json": "{}",
            "exercises/01.a/01.solution/dist/x.js": "compiled",
            "exercises/01.a/01.solution/vite.config.ts": "export default {}",
            "exercises/01.a/01.solution/tsconfig.json": "{}",
            "exercises/01.a/01.solution/pnpm-lock.yaml": "lock",
            "exercises/01.a/01.solution/package.json": '{"name": "x"}',
        },
    )
    unit = list_folder(str(root))[0]
    before = unit.read()
    _, files = workshop.unbundle(before)
    assert sorted(files) == [
        ".gitignore",
        "epicshop/.diffignore",
        "exercises/01.a/01.problem/src/x.ts",
        "exercises/01.a/01.solution/package.json",  # a dependency a step adds is part of the lesson
        "exercises/01.a/01.solution/src/x.ts",
    ]
    (root / "exercises/01.a/01.solution/src/x.test.ts").write_text("test('changed')")
    assert list_folder(str(root))[0].read() == before  # a hidden file's edit re-ingests nothing
    (root / "epicshop/.diffignore").write_text("")
    assert list_folder(str(root))[0].read() != before  # the patterns are part of the unit
