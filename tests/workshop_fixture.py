"""A workshop in the Epic Web layout, written by code: what the workshop contract tests read.

`closures-and-state` (package.json epicshop.title "Closures and State", product "Epic React"):

    exercises/01.closures/01.{problem,solution}.counter   teaches closures; code with createCounter
    exercises/02.state/01.{problem,solution}.use-state    teaches state; code with useState whose comments
                                                          talk about closures (uses, does not teach, them)

Each step also holds what the workshop hides from diffs: tests, configuration, a lock file and a
`fixtures/` folder named in `epicshop/.diffignore`, so a bundle can be checked for leaving them out.
`write_titled_by_readme` writes a second workshop with no `epicshop.title` (its README names it).
"""

from __future__ import annotations

import json
from pathlib import Path

TITLE = "Closures and State"
PRODUCT = "Epic React"

CLOSURES_README = """# Closures

A closure is a function that remembers the variables of the scope where it was created,
even after that scope has finished running. Each call of an outer function creates a fresh
scope, so each inner function it returns keeps its own private copy of those variables.

Closures are how JavaScript keeps private state without classes: the variable lives on
because the inner function still refers to it, and nothing outside can reach it.
"""

STATE_README = """# State

State is data that changes over time and that the screen should reflect. A React component
asks for state with the `useState` hook, which returns the current value and a setter.
Calling the setter schedules a new render with the new value.
"""

COUNTER_PROBLEM = """// Return an object with increment() and value().
export function createCounter() {
\t// 🐨 keep a count here
\treturn {
\t\tincrement() {},
\t\tvalue() {
\t\t\treturn 0
\t\t},
\t}
}
"""

COUNTER_SOLUTION = """// Return an object with increment() and value().
export function createCounter() {
\tlet count = 0
\treturn {
\t\tincrement() {
\t\t\tcount += 1
\t\t},
\t\tvalue() {
\t\t\treturn count
\t\t},
\t}
}
"""

APP_PROBLEM = """import { useState } from 'react'

// This handler is a closure over the closure scope of the render: a closure captures count,
// and every closure created by a render sees that render's closure variables.
export function App() {
\tconst count = 0
\tconst onClick = () => console.log(count) // closure
\treturn <button onClick={onClick}>{count}</button>
}
"""

APP_SOLUTION = """import { useState } from 'react'

// This handler is a closure over the closure scope of the render: a closure captures count,
// and every closure created by a render sees that render's closure variables.
export function App() {
\tconst [count, setCount] = useState(0)
\tconst onClick = () => setCount(count + 1) // closure
\treturn <button onClick={onClick}>{count}</button>
}
"""


def _test_file(name: str) -> str:
    """A long test file: in real workshops tests are a large share of a step's characters."""
    cases = "\n".join(f"test('{name} case {i}', () => {{\n\texpect(run{i}()).toBe({i})\n}})\n" for i in range(1, 40))
    return f"import {{ test, expect }} from 'vitest'\n\n{cases}"


# Files every step folder holds that the workshop hides from diffs (and so from bundles).
HIDDEN = {
    "src/{name}.test.ts": None,  # filled with _test_file
    "vite.config.ts": "export default { test: { environment: 'node' } }\n",
    "tsconfig.json": '{"compilerOptions": {"strict": true}}\n',
    "yarn.lock": "# lock\n",
    "fixtures/data.json": '{"seed": 1}\n',
}


def _write(root: Path, files: dict[str, str]) -> None:
    for key, text in files.items():
        path = root / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _step(folder: str, name: str, readme: str, code_path: str, code: str, variant: int) -> dict[str, str]:
    files = {f"{folder}/README.mdx": readme, f"{folder}/{code_path}": code}
    for key, text in HIDDEN.items():
        path = key.format(name=name)
        files[f"{folder}/{path}"] = _test_file(name) if text is None else text.replace("1", str(variant))
    return files


def write_epic_workshop(root: Path) -> Path:
    package = {"name": "closures-and-state", "epicshop": {"title": TITLE, "product": {"displayNameShort": PRODUCT}}}
    files = {
        "package.json": json.dumps(package, indent=2),
        "README.md": "# closures-and-state (repository readme)\n",
        "epicshop/.diffignore": "# fixtures are data, not lessons\nfixtures/\n",
        ".gitignore": "node_modules\ndist\n",
        "exercises/README.mdx": f"# {TITLE}\n\nWelcome: closures first, then React state.\n",
        "exercises/FINISHED.mdx": "# Done\n\nYou finished the workshop.\n",
        "exercises/01.closures/README.mdx": CLOSURES_README,
        "exercises/01.closures/FINISHED.mdx": "# Closures: done\n\nYou can now explain closures.\n",
        "exercises/02.state/README.mdx": STATE_README,
    }
    ex1 = "exercises/01.closures"
    files |= _step(
        f"{ex1}/01.problem.counter",
        "counter",
        "# Counter\n\nWrite `createCounter`.\n",
        "src/counter.ts",
        COUNTER_PROBLEM,
        1,
    )
    files |= _step(
        f"{ex1}/01.solution.counter",
        "counter",
        "# Counter: solution\n\nThe count lives in a closure.\n",
        "src/counter.ts",
        COUNTER_SOLUTION,
        2,
    )
    ex2 = "exercises/02.state"
    files |= _step(
        f"{ex2}/01.problem.use-state",
        "app",
        "# useState\n\nMake the button count clicks.\n",
        "src/app.tsx",
        APP_PROBLEM,
        3,
    )
    files |= _step(
        f"{ex2}/01.solution.use-state",
        "app",
        "# useState: solution\n\nThe setter re-renders.\n",
        "src/app.tsx",
        APP_SOLUTION,
        4,
    )
    _write(root, files)
    return root


def hidden_chars(root: Path) -> int:
    """Characters of the files under exercises/ that the workshop hides from diffs (for the share it had)."""
    names = {"vite.config.ts", "tsconfig.json", "yarn.lock", "data.json"}
    paths = [p for p in (root / "exercises").rglob("*") if p.is_file()]
    return sum(len(p.read_text()) for p in paths if p.name in names or ".test." in p.name)


def write_titled_by_readme(root: Path) -> Path:
    _write(
        root,
        {
            "package.json": json.dumps({"name": "x", "epicshop": {"product": {"slug": "epic-web"}}}),
            "README.md": "# Web Forms From Scratch\n\nA workshop.\n",
            "exercises/01.forms/README.mdx": "# Forms\n\nA form sends named fields to the server.\n",
            "exercises/01.forms/01.problem/index.html": "<form></form>\n",
            "exercises/01.forms/01.solution/index.html": '<form method="post"><input name="q"></form>\n',
        },
    )
    return root
