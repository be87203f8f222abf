"""Nothing in thoth imports the ingest job's command line; the job imports only thoth's core (DESIGN.md,
rules of the house).

Core is every `thoth` module but the surfaces and entry points below. Ingestion itself (parsers, runs,
sources, bucket events) is core (thoth/writes): the server's bucket-event and reindex routes call it
directly, and `python -m ingest` is a command line over it.
"""

from __future__ import annotations

import ast
import graphlib
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO_ROOT

NOT_CORE = ("thoth.mcp", "thoth.ui", "thoth.cli", "thoth.app")  # the server's surfaces and entry points


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import in a file, in functions too; relative imports resolved to their package."""
    package = ".".join(path.relative_to(REPO_ROOT).with_suffix("").parts[:-1])
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(part for part in (base, node.module or "") if part)
            found += [(node.lineno, module)] + [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
    return found


def files(package: str) -> list[Path]:
    return sorted((REPO_ROOT / package).rglob("*.py"))


def test_no_thoth_module_imports_the_ingest_job() -> None:
    offending = [
        f"{path.relative_to(REPO_ROOT)}:{line}: {module}"
        for path in files("thoth")
        for line, module in imported_modules(path)
        if module == "ingest" or module.startswith("ingest.")
    ]
    assert files("thoth") and not offending, offending


def test_the_ingest_job_imports_only_thoths_core() -> None:
    offending = [
        f"{path.relative_to(REPO_ROOT)}:{line}: {module}"
        for path in files("ingest")
        for line, module in imported_modules(path)
        if any(module == name or module.startswith(name + ".") for name in NOT_CORE)
    ]
    assert files("ingest") and not offending, offending


def test_importing_all_of_thoth_and_building_the_server_loads_no_ingest_module(tmp_path: Path) -> None:
    # a fresh interpreter: this test process has imported ingest already (conftest)
    script = """
import pkgutil, sys, importlib
import thoth
from thoth.config import Settings
names = [m.name for m in pkgutil.walk_packages(thoth.__path__, "thoth.")]
for name in names:
    importlib.import_module(name)
from thoth.mcp.server import create_app
create_app(Settings.from_env({}, db_uri=sys.argv[1], admin_token="x"), warm_up=False)
loaded = sorted(m for m in sys.modules if m == "ingest" or m.startswith("ingest."))
print(len(names), loaded)
"""
    result = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "db")], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    count, loaded = result.stdout.split(" ", 1)
    assert int(count) > 50 and loaded.strip() == "[]", result.stdout


# -- the import graph of thoth/ (issue 50) --------------------------------------------------------------
# An edge A -> B is an import in A (at module level or in a function) that loads B: `import B`, or
# `from P import n`, which is P.n when that is a module (a sibling or child module, not P's __init__) and
# P itself otherwise (a name defined in P, its __init__ when P is a package). Imports under
# `if TYPE_CHECKING:` never run: they count for the layers, not for cycles.

MODULES = {
    ".".join(p.relative_to(REPO_ROOT).with_suffix("").parts).removesuffix(".__init__"): p for p in files("thoth")
}


def _imports(module: str, path: Path) -> list[tuple[str, bool]]:
    """(module imported, whether only for type checking) of every import in `module`, to thoth modules."""
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    tree = ast.parse(path.read_text(), str(path))
    typing_only = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
        for statement in block.body
        for node in ast.walk(statement)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package if node.level else ""
            source = ".".join(part for part in (base, node.module or "") if part)
            targets = [f"{source}.{a.name}" if f"{source}.{a.name}" in MODULES else source for a in node.names]
        else:
            continue
        found += [(target, id(node) in typing_only) for target in targets if target in MODULES and target != module]
    return found


IMPORTS = {module: _imports(module, path) for module, path in MODULES.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The graph's first cycle (graphlib's), its modules sorted; [] when there is none."""
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as exc:
        return [sorted(set(exc.args[1]))]
    return []


def test_cycles_finds_a_cycle_and_only_that() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c"]]


def test_no_import_cycle_in_thoth() -> None:
    graph = {module: {target for target, typing in found if not typing} for module, found in IMPORTS.items()}
    assert cycles(graph) == []


def _crossing(source: str, target: str) -> list[str]:
    return sorted(
        f"{module} -> {imported}"
        for module, found in IMPORTS.items()
        if module.startswith(source + ".")
        for imported, _ in found
        if imported == target or imported.startswith(target + ".")
    )


def test_writes_and_retrieval_do_not_import_each_other() -> None:
    """What both need (content hashes and source refs, citation URLs, BibTeX, summaries, a source's spec
    and saved state) is in modules of its own that both import."""
    assert _crossing("thoth.writes", "thoth.retrieval") == []
    assert _crossing("thoth.retrieval", "thoth.writes") == []


def _store_receiver(call: ast.Call) -> bool:
    """`store.f(...)`, `self.store.f(...)`, `app.store.f(...)`: a call on a Store."""
    func = call.func
    if not isinstance(func, ast.Attribute):
        return False
    receiver = func.value
    return (isinstance(receiver, ast.Name) and receiver.id == "store") or (
        isinstance(receiver, ast.Attribute) and receiver.attr == "store"
    )


def test_retrieval_passes_no_callable_into_the_store() -> None:
    """Search is a pipeline retrieval owns: the store answers plain calls with records and is given no
    function of retrieval's to call back (a lambda, a function defined in retrieval, a partial)."""
    offending = []
    for path in files("thoth/retrieval"):
        tree = ast.parse(path.read_text(), str(path))
        methods = {id(n) for c in ast.walk(tree) if isinstance(c, ast.ClassDef) for n in c.body}
        functions = {
            n.name
            for n in ast.walk(tree)
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and id(n) not in methods
        }
        functions |= {
            target.id
            for n in ast.walk(tree)
            if isinstance(n, ast.Assign) and any(isinstance(part, ast.Lambda) for part in ast.walk(n.value))
            for target in n.targets
            if isinstance(target, ast.Name)
        }
        for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call) and _store_receiver(n)):
            for value in [*call.args, *(k.value for k in call.keywords)]:
                if (
                    isinstance(value, ast.Lambda)
                    or (isinstance(value, ast.Name) and value.id in functions)
                    or (isinstance(value, ast.Call) and ast.unparse(value.func).endswith("partial"))
                ):
                    offending.append(f"{path.relative_to(REPO_ROOT)}:{call.lineno}: {ast.unparse(value)}")
    assert offending == []


KINDS = {"folder", "bucket", "web", "git"}
SCHEMES = {"gs://", "http://", "https://", "git@", "ssh://", "git://"}


def _decides_a_kind(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Returns a kind's name, tells two URI schemes apart, or asks whether a source is in a bucket (a
    `startswith("gs://")` on anything but the index's own location: `settings.db_uri`, a store's `self.…`)."""
    nodes = list(ast.walk(function))
    constants = {n.value for n in nodes if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    returned = {n.value.value for n in nodes if isinstance(n, ast.Return) and isinstance(n.value, ast.Constant)}
    for call in (n for n in nodes if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)):
        receiver = call.func.value
        own = isinstance(receiver, ast.Attribute) and (
            receiver.attr == "db_uri" or (isinstance(receiver.value, ast.Name) and receiver.value.id == "self")
        )
        if call.func.attr == "startswith" and "gs://" in ast.unparse(call.args) and not own:
            return True
    return bool(returned & KINDS) or len({s.rstrip("s:/") for s in constants & SCHEMES}) > 1


def test_one_place_decides_a_sources_kind() -> None:
    """thoth/source_spec.py decides what kind a source is (folder, bucket, web, git); the rest read
    `SourceSpec.kind`."""
    deciding = ("origin_kind", "is_git_url")
    offending = []
    for path in files("thoth"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
            if name in deciding and path.name != "source_spec.py":
                offending.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno}: {name}")
    assert offending == []
    # nor does any other function return a kind's name, tell URI schemes apart, or ask "is it a bucket?"
    deciders = [
        f"{path.relative_to(REPO_ROOT)}:{node.name}"
        for path in files("thoth")
        if path.name != "gcs.py"  # parses gs:// URIs
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _decides_a_kind(node)
    ]
    assert deciders == ["thoth/source_spec.py:origin_kind"]
