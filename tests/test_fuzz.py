"""Every door checked (issue 40), over a real server with roles on: each tool's schema walked at its
bounds, a seeded fuzz of every tool (bench/fuzz.py's calls), and the issue's reproductions.

- Bounds: each tool is called with arguments it serves, then with one bounded argument at its minimum,
  its maximum and just past each. What the schema accepts is served; what it refuses is refused by the
  schema ("invalid arguments: NAME: …").
- Fuzz: a few hundred calls, seeded; no server fault (HTTP 500, -32603, a server-fault tool error),
  no path on the server's disk, no traceback in an answer or an ERROR line in the log.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.fuzz import READER, WRITER, Answer, base_arguments, bounds, fuzz, list_tools, tool_call
from examples.pdfgen import write_paper_pdf
from tests.conftest import LOOPBACK, REPO_ROOT, WORKSHOP, LiveServer, make_settings, write_corpus
from thoth.config import Settings
from thoth.writes.writer import Writer

FUZZ_CALLS = 300
SEED = 40
PORTAL = "https://portal.example.com"
# An argument that needs another (each refusal names it): the other is given while its bounds are walked.
NEEDS = {
    ("resolve_citation", "page_end"): {"page_start": 1},
    ("search_topic_context", "stepNumber"): {"exerciseNumber": 1},
}


# Base arguments the fuzz index may not serve, and what their refusal then says: fuzz-site (added by
# bench.fuzz.base_arguments, its host unreachable) is not indexed, and its first run may still be queued when
# add_source is called again.
REFUSED_HERE = {
    "refresh_source": "'fuzz-site' is not indexed",
    "add_source": "a run of 'fuzz-site' is already",
}


@dataclasses.dataclass
class Fuzzed:
    server: LiveServer
    settings: Settings
    private: tuple[str, ...]  # folders no answer may name
    base: dict[str, dict]
    tools: list[dict]


class Collected(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def bad(self) -> list[str]:
        return [r.getMessage()[:300] for r in self.records if r.levelno >= logging.ERROR or r.exc_info]


@pytest.fixture(scope="module")
def log() -> Iterator[Collected]:
    handler = Collected()
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    yield handler
    root.removeHandler(handler)
    root.setLevel(level)


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory, log: Collected) -> Iterator[Fuzzed]:
    """Its own index (the fuzz writes): the handbook corpus and a workshop; tokens for a reader and a writer."""
    corpus = write_corpus(tmp_path_factory.mktemp("fuzz-handbook"))
    papers = tmp_path_factory.mktemp("fuzz-papers")  # a paper with a figure: get_figure has one to show
    body = "Dense retrieval finds passages by meaning. " * 6
    write_paper_pdf(
        papers / "paper.pdf", "Readers", [("Ann Lee", "")], [[("p", body), ("figure", "Figure 1: Recall.")]]
    )
    db = tmp_path_factory.mktemp("fuzz") / "lancedb"
    settings = make_settings(db)
    for root, name in [(corpus, "handbook"), (WORKSHOP, None), (papers, "papers")]:
        summary = Writer(settings).run(str(root), name=name)
        assert not summary.failed, summary.render()
    served = dataclasses.replace(
        settings,
        auth_mode="tokens",
        auth_tokens=(READER,),
        auth_writer_tokens=(WRITER,),
        portal_base_url=PORTAL,  # resolve_citation's mode without a bucket or file access
    )
    with LiveServer(served) as server:
        private = (str(db), str(corpus), str(papers), str(REPO_ROOT))
        base = base_arguments(LOOPBACK, server.url)
        yield Fuzzed(server, served, private, base, list_tools(LOOPBACK, server.url))


def call(fuzzed: Fuzzed, name: str, arguments: dict, token: str = WRITER) -> Answer:
    return tool_call(LOOPBACK, fuzzed.server.url, name, arguments, token)


# -- the schema walked at its bounds -------------------------------------------------------------------


def test_every_tool_has_arguments_it_serves(fuzzed: Fuzzed) -> None:
    assert {t["name"] for t in fuzzed.tools} == set(fuzzed.base)
    for name, arguments in fuzzed.base.items():
        answer = call(fuzzed, name, arguments)
        allowed = answer.served() and name in REFUSED_HERE and REFUSED_HERE[name] in answer.message
        assert not answer.refused or allowed, (name, arguments, answer.text[:500])


def test_every_bound_of_every_schema(fuzzed: Fuzzed) -> None:
    """What the schema accepts is served, what it refuses it refuses itself, naming the argument."""
    wrong = []
    walked = 0
    for tool in fuzzed.tools:
        schema = tool["inputSchema"]
        base = fuzzed.base[tool["name"]]
        for prop, prop_schema in schema.get("properties", {}).items():
            sample = base[prop][0] if isinstance(base.get(prop), list) and base[prop] else None
            for value, accepted in bounds(prop_schema, schema.get("$defs", {}), sample):
                walked += 1
                answer = call(fuzzed, tool["name"], {**base, **NEEDS.get((tool["name"], prop), {}), prop: value})
                shown = f"{tool['name']}({prop}={str(value)[:30]!r}): {answer.text[:300]}"
                if answer.fault():
                    wrong.append(f"fault: {shown}")
                elif accepted and isinstance(value, str) and answer.message.startswith(f"invalid arguments: {prop}"):
                    wrong.append(f"schema accepts, length refused: {shown}")  # a string's content may still be wrong
                elif accepted and not isinstance(value, str) and not answer.served():
                    wrong.append(f"schema accepts, code refuses: {shown}")
                elif not accepted and not answer.message.startswith(f"invalid arguments: {prop}"):
                    wrong.append(f"schema refuses, but not by name: {shown}")
    assert walked > 50
    assert not wrong, "\n".join(wrong)


# -- the bounded fuzz ----------------------------------------------------------------------------------


def test_seeded_fuzz_of_every_tool(fuzzed: Fuzzed, log: Collected) -> None:
    tally = fuzz(fuzzed.server.url, FUZZ_CALLS, SEED, fuzzed.private)
    tally.add_log([])
    assert tally.calls == FUZZ_CALLS
    assert tally.findings() == 0, tally.report()
    assert log.bad() == [], log.bad()
    assert tally.kinds["ok"] > FUZZ_CALLS // 5, tally.report()  # the fuzz reaches the tools' bodies


# -- the reproductions of issue 40 -------------------------------------------------------------------


def test_search_serves_top_k_above_the_default_prefetch(fuzzed: Fuzzed) -> None:
    answer = call(fuzzed, "search", {"query": "time off", "top_k": 45})
    assert not answer.refused, answer.text[:300]


def test_a_filter_integer_past_32_bits_names_filters(fuzzed: Fuzzed, log: Collected) -> None:
    answer = call(fuzzed, "qurio_search", {"query": "deploy", "filters": {"step_number": 2147483648}})
    assert answer.error_code is None and answer.result["isError"], answer.text
    assert answer.message.startswith("filters: 'step_number'"), answer.message
    assert log.bad() == []


@pytest.mark.parametrize(
    ("tool", "argument"),
    [
        ("fetch", "id"),
        ("rag_node_get", "node_id"),
        ("qurio_read_page", "url"),
    ],
)
def test_nul_is_refused_by_the_argument_name(fuzzed: Fuzzed, tool: str, argument: str) -> None:
    answer = call(fuzzed, tool, {**fuzzed.base[tool], argument: "ab\x00c"})
    assert answer.result["isError"] and f"{argument}: may not contain NUL" in answer.message, answer.message


def test_set_default_collection_refuses_by_name(fuzzed: Fuzzed) -> None:
    answer = call(fuzzed, "set_default_collection", {"name": "no-such-collection"})
    assert answer.message.startswith("name: collection 'no-such-collection' does not exist"), answer.message


@pytest.mark.parametrize(
    ("tool", "argument"), [("list_collection_files", "collection"), ("retrieve_learning_context", "workshop")]
)
def test_a_long_value_is_cut_short_in_a_refusal(fuzzed: Fuzzed, tool: str, argument: str) -> None:
    answer = call(fuzzed, tool, {**fuzzed.base[tool], argument: "y" * 200})
    assert "y" * 61 not in answer.text and "y" * 60 + "…" in answer.message, answer.message


def test_no_server_path_behind_auth(fuzzed: Fuzzed) -> None:
    listed = call(fuzzed, "list_collections", {})
    refused = call(fuzzed, "ingest_document", {"dataset_id": "handbook", "file_content": "planted"})
    assert refused.result["isError"] and "synced from a folder or bucket" in refused.message
    for answer in (listed, refused):
        assert not [p for p in fuzzed.private if p in answer.text], answer.text[:500]
    uris = {c["collection"]: c["uri"] for c in listed.result["structuredContent"]["collections"]}
    assert (uris["caching-fundamentals"], uris["handbook"]) == ("caching-fundamentals", "handbook")


def test_a_local_laptop_index_still_shows_the_folder(fuzzed: Fuzzed, tmp_path: Path) -> None:
    with LiveServer(dataclasses.replace(fuzzed.settings, auth_mode="off")) as server:
        listed = server.rpc("tools/call", {"name": "list_collections", "arguments": {}}).json()["result"]
    uris = {c["collection"]: c["uri"] for c in listed["structuredContent"]["collections"]}
    assert uris["caching-fundamentals"] == str(WORKSHOP)
