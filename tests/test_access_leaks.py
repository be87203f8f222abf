"""Collections shared with some people (THOTH_ACCESS_FILE), over real HTTP with Google ID tokens: a
restricted person never learns a hidden collection exists, and the person it is shared with sees it.

One index: the handbook (everyone reads it), the `caching-fundamentals` workshop, and two collections
shared with alice only: `hr-quokka` (Markdown with a RAPTOR tree) and the workshop `zorblax-hooks`. Bob
signs in too. Every tool bob is offered is called with arguments drawn from its input schema, each string
argument given one of the hidden collections' names or ids in turn (and, beside it, a made-up value of the
same shape: the two answers must be the same once the value is taken out). Every resource, resource
template, completion, prompt and console page is asked the same way. No hidden name, marker word or id
appears in any answer, header or error bob gets.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from tests.conftest import (
    LOOPBACK,
    WORKSHOP,
    LiveServer,
    bm25,
    nearest,
    tree_settings,
    write_corpus,
    write_topic_corpus,
)
from tests.test_auth import AUDIENCE, CertsServer, Key
from thoth.config import Settings
from thoth.records import Chunk, Collections, Document, Source, TreeNode
from thoth.store import Store
from thoth.writes.writer import Writer

HIDDEN = ("hr-quokka", "zorblax-hooks")
MARKERS = ("quokka", "zorblax")  # words only the hidden collections' texts hold
ACCESS = """
default:
  readers: ["*"]
collections:
  hr-quokka:
    readers: ["group:people-team"]
    writers: ["alice@example.com"]
  zorblax-hooks:
    readers: ["domain:people.example.com", "alice@example.com"]
  quokka-notes:
    writers: ["alice@example.com"]
"""
ALICE = "alice@example.com"
BOB = "bob@example.com"


def write_hidden_corpus(root: Path) -> Path:
    """The topic corpus (a tree of several levels), each paragraph with a sentence naming the marker."""
    write_topic_corpus(root)
    for n, path in enumerate(sorted(root.rglob("*.md"))):
        text = path.read_text().replace("\n\n", f"\n\nThe quokka payroll ledger holds entry {n}. ", 1)
        path.write_text(text)
    return root


def write_hidden_workshop(root: Path) -> Path:
    (root / "exercises" / "01.zorblax-state" / "01.problem").mkdir(parents=True)
    (root / "package.json").write_text('{"epicshop": {"title": "Zorblax Hooks"}}')
    (root / "exercises" / "01.zorblax-state" / "README.md").write_text(
        "# Zorblax state\n\nA zorblax component keeps values between renders in state.\n"
    )
    (root / "exercises" / "01.zorblax-state" / "01.problem" / "README.md").write_text(
        "# Zorblax counter\n\nMake the zorblax counter add one on every click.\n"
    )
    (root / "exercises" / "01.zorblax-state" / "01.problem" / "counter.jsx").write_text(
        "export function ZorblaxCounter() {\n\treturn <button>0</button>\n}\n"
    )
    return root


@pytest.fixture(scope="module")
def shared_index(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    settings = tree_settings(tmp_path_factory.mktemp("access") / "lancedb")
    writer = Writer(settings)
    for root, name in (
        (write_corpus(tmp_path_factory.mktemp("handbook")), "handbook"),
        (write_hidden_corpus(tmp_path_factory.mktemp("hidden")), "hr-quokka"),
        (WORKSHOP, None),
        (write_hidden_workshop(tmp_path_factory.mktemp("ws") / "zorblax-hooks"), None),
    ):
        summary = writer.run(str(root), name=name)
        assert not summary.failed, summary.render()
    return settings


@pytest.fixture(scope="module")
def hidden_ids(shared_index: Settings) -> list[str]:
    """Every id of the hidden collections a caller could pass: documents, chunks, tree nodes, keys, refs."""
    store = Store(shared_index)
    ids: set[str] = set(HIDDEN)
    for source in HIDDEN:
        docs = store.find(Document, {"source_id": source})
        assert docs, source
        ids |= {d.doc_id for d in docs} | {d.key for d in docs} | {d.object_id for d in docs if d.object_id}
        chunks = store.find(Chunk, {"source_id": source}, fields=["source_ref", "partition_id"])
        ids |= {c.chunk_id for c in chunks} | {c.source_ref for c in chunks if c.source_ref}
        ids |= {c.partition_id for c in chunks if c.partition_id}
        ids |= {n.node_id for n in store.find(TreeNode, {"source_id": source}, fields=[])}
    assert any(i.startswith("doc://hr-quokka/") for i in ids)
    return sorted(i for i in ids if len(i) >= 6)


@pytest.fixture(scope="module")
def key() -> Key:
    return Key("access-key-1")


@pytest.fixture(scope="module")
def live(shared_index: Settings, key: Key, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    access = tmp_path_factory.mktemp("access-file") / "access.yaml"
    access.write_text(ACCESS)
    with CertsServer(key) as certs, pytest.MonkeyPatch.context() as patch:
        patch.setattr("thoth.mcp.auth.GOOGLE_CERTS_URL", certs.url)  # the test's signing keys
        settings = replace(
            shared_index,
            auth_mode="google",
            auth_audiences=(AUDIENCE,),
            auth_writers=(ALICE, BOB),  # both have the writer role; only alice may write hr-quokka
            access_file=str(access),
        )
        with LiveServer(settings) as server:
            yield server


def headers(key: Key, email: str, groups: tuple[str, ...] = ()) -> dict[str, str]:
    claims = {"groups": list(groups)} if groups else {}
    return {"Authorization": f"Bearer {key.token(email, **claims)}"}


def alice(key: Key) -> dict[str, str]:
    return headers(key, ALICE, ("people-team",))


def rpc(server: LiveServer, auth: dict, method: str, params: dict | None = None) -> httpx.Response:
    response = server.rpc(method, params, headers=auth)
    assert response.status_code == 200, response.text
    return response


def leaks(response: httpx.Response, secrets: list[str], given: tuple[str, ...] = ()) -> list[str]:
    """The secrets in the response's body or headers, once the values the caller passed are taken out."""
    text = response.text + json.dumps(dict(response.headers))
    for value in sorted(given, key=len, reverse=True):
        text = text.replace(value, "<given>").replace(json.dumps(value)[1:-1], "<given>")
    lowered = text.lower()
    return [s for s in secrets if s.lower() in lowered]


_VOLATILE = re.compile(r"correlation[^,}]*|\d+(\.\d+)? ?ms|\"elapsed[^,}]*")


def normalised(response: httpx.Response, value: str) -> str:
    """The response with the value the caller passed (whole, or cut short by an error message) taken out."""
    text = response.text.replace(json.dumps(value)[1:-1], "<given>").replace(value, "<given>")
    for end in range(len(value) - 1, 7, -1):
        text = text.replace(value[:end] + "…", "<given>")
    return _VOLATILE.sub("", text)


def made_up(value: str) -> str:
    """A value of `value`'s shape that names nothing in the index."""
    if re.fullmatch(r"[0-9a-f]{16,}", value):
        return "0" * len(value)
    return (
        value.replace("quokka", "wombat").replace("zorblax", "gleeble")
        if any(m in value for m in MARKERS)
        else value[:-1] + ("x" if value[-1] != "x" else "y")
    )


def arguments(schema: dict, value: str) -> dict:
    """Arguments for a tool with this input schema: every string `value`, the rest as small as allowed."""
    out: dict = {}
    for name, prop in (schema.get("properties") or {}).items():
        kinds = [prop] + list(prop.get("anyOf") or [])
        types = {k.get("type") for k in kinds}
        enum = next((k["enum"] for k in kinds if "enum" in k), None)
        if enum:
            out[name] = enum[0]
        elif "string" in types:
            out[name] = value
        elif "array" in types:
            out[name] = [value]
        elif "integer" in types or "number" in types:
            low = next((k.get("minimum") for k in kinds if k.get("minimum") is not None), 1)
            out[name] = max(int(low), 1)
        elif "boolean" in types:
            out[name] = False
    return out


def test_the_permitted_person_sees_the_shared_collections(live: LiveServer, key: Key) -> None:
    listed = rpc(live, alice(key), "tools/call", {"name": "list_collections", "arguments": {}}).text
    assert all(name in listed for name in HIDDEN)
    found = rpc(live, alice(key), "tools/call", {"name": "search", "arguments": {"query": "quokka payroll"}})
    assert "quokka payroll ledger" in found.text
    tree = rpc(
        live,
        alice(key),
        "tools/call",
        {"name": "retrieve_documents", "arguments": {"dataset_id": "hr-quokka", "query": "quokka payroll"}},
    )
    assert "quokka" in tree.text.lower()
    assert "zorblax" in rpc(live, alice(key), "resources/list").text.lower() or "zorblax" in listed


def test_tools_show_the_restricted_person_nothing_of_a_hidden_collection(
    live: LiveServer, key: Key, hidden_ids: list[str]
) -> None:
    bob = headers(key, BOB)
    secrets = [*HIDDEN, *MARKERS, *hidden_ids]
    tools = rpc(live, bob, "tools/list").json()["result"]["tools"]
    assert {"search_handbook", "list_collections", "retrieve_documents", "ingest_document"} <= {
        t["name"] for t in tools
    }
    assert not leaks(rpc(live, bob, "tools/list"), secrets)
    values = [*HIDDEN, "quokka payroll ledger", *hidden_ids[:: max(1, len(hidden_ids) // 4)]]
    differ: list[str] = []
    for tool in tools:
        for value in values:
            args = arguments(tool["inputSchema"], value)
            response = rpc(live, bob, "tools/call", {"name": tool["name"], "arguments": args})
            found = leaks(response, secrets, (value,))
            assert not found, (tool["name"], args, found, response.text[:500])
            body = response.json()
            if "error" not in body and not body["result"].get("isError"):
                continue  # an answer (a search's hits): no hidden text in it is what counts
            other = made_up(value)  # a refusal: the same as for a name that does not exist
            twin = rpc(
                live, bob, "tools/call", {"name": tool["name"], "arguments": arguments(tool["inputSchema"], other)}
            )
            if normalised(response, value) != normalised(twin, other):
                differ.append(f"{tool['name']}({value}): {response.text[:300]} != {twin.text[:300]}")
    assert not differ, "\n".join(differ[:5])


def test_writes_need_the_write_grant(live: LiveServer, key: Key) -> None:
    args = {"dataset_id": "hr-quokka", "file_content": "A new quokka policy."}
    refused = rpc(live, headers(key, BOB), "tools/call", {"name": "ingest_document", "arguments": args}).json()
    assert refused["result"]["isError"] and "may not write" in refused["result"]["content"][0]["text"]
    unknown = {"dataset_id": "never-made", "file_content": "x"}
    twin = rpc(live, headers(key, BOB), "tools/call", {"name": "ingest_document", "arguments": unknown}).json()
    assert twin["result"]["content"][0]["text"] == refused["result"]["content"][0]["text"].replace(
        "hr-quokka", "never-made"
    )
    # alice creates quokka-notes (the file names her its writer), not the handbook (the default names no writer)
    notes = {"dataset_id": "quokka-notes", "file_content": "A new quokka policy."}
    written = rpc(live, alice(key), "tools/call", {"name": "ingest_document", "arguments": notes}).json()["result"]
    assert not written["isError"] and written["structuredContent"]["chunks"] >= 1, written
    handbook = {"dataset_id": "handbook", "file_content": "x"}
    refused = rpc(live, alice(key), "tools/call", {"name": "ingest_document", "arguments": handbook}).json()
    assert "may not write" in refused["result"]["content"][0]["text"]


def test_resources_prompts_and_completions_hide_it(live: LiveServer, key: Key, hidden_ids: list[str]) -> None:
    bob = headers(key, BOB)
    secrets = [*HIDDEN, *MARKERS, *hidden_ids]
    everything = [rpc(live, alice(key), m).json()["result"] for m in ("resources/list", "resources/templates/list")]
    shared = [r["uri"] for r in everything[0]["resources"] if any(h in r["uri"] for h in HIDDEN)]
    refs = [i for i in hidden_ids if i.startswith("doc://")][:6]
    for method in ("resources/list", "resources/templates/list", "prompts/list"):
        assert not leaks(rpc(live, bob, method), secrets), method
    for uri in [*shared, *refs]:
        response = rpc(live, bob, "resources/read", {"uri": uri})
        collection, _, path = uri.split("://", 1)[1].partition("/")
        parts = (uri, collection, path.split("#")[0], path)
        assert not leaks(response, secrets, parts), (uri, response.text[:300])
        assert "error" in response.json(), response.text[:300]
        other = uri.replace(collection, made_up(collection), 1)
        twin = rpc(live, bob, "resources/read", {"uri": other})
        assert normalised(response, collection) == normalised(twin, made_up(collection)), (uri, twin.text[:300])
    prompts = rpc(live, bob, "prompts/list").json()["result"]["prompts"]
    templates = everything[1]["resourceTemplates"]
    asked = [({"type": "ref/prompt", "name": p["name"]}, a["name"]) for p in prompts for a in p.get("arguments", [])]
    for template in templates:
        for name in re.findall(r"\{[?&]?([^}]+)\}", template["uriTemplate"]):
            for variable in name.split(","):
                asked.append(({"type": "ref/resource", "uri": template["uriTemplate"]}, variable))
    assert asked
    offered_to_alice: list[str] = []
    for ref, name in asked:
        for prefix in ("", "hr", "zor", "q"):
            params = {"ref": ref, "argument": {"name": name, "value": prefix}}
            response = rpc(live, bob, "completion/complete", params)
            assert not leaks(response, secrets), (ref, name, prefix, response.text[:300])
        mine = rpc(live, alice(key), "completion/complete", {"ref": ref, "argument": {"name": name, "value": "hr"}})
        offered_to_alice += mine.json()["result"]["completion"]["values"]
    assert "hr-quokka" in offered_to_alice
    for prompt in prompts:
        for value in (*HIDDEN, "quokka"):
            args = {a["name"]: value for a in prompt.get("arguments", [])}
            response = rpc(live, bob, "prompts/get", {"name": prompt["name"], "arguments": args})
            assert not leaks(response, secrets, (value,)), (prompt["name"], response.text[:300])


def test_the_console_and_health_hide_it(live: LiveServer, key: Key, hidden_ids: list[str]) -> None:
    bob = headers(key, BOB)
    secrets = [*HIDDEN, *MARKERS, *hidden_ids]
    nodes = [i for i in hidden_ids if re.fullmatch(r"[0-9a-f]{16,}", i)]
    refs = [i for i in hidden_ids if i.startswith("doc://")][:3]
    pages = ["/ui/", "/ui/search?q=quokka+payroll", "/ui/search?q=zorblax&mode=keyword", "/health"]
    for name in HIDDEN:
        pages += [f"/ui/collections/{name}", f"/ui/runs/{name}", f"/ui/trees/{name}", f"/ui/workshops/{name}"]
        pages += [f"/ui/search?q=quokka&collection={name}"]
        pages += [f"/ui/trees/{name}/nodes/{node}" for node in nodes[:3]]
    pages += [f"/ui/documents/{doc}" for doc in nodes[:6]]
    pages += [f"/ui/cite?ref={quote(ref)}" for ref in refs]
    for path in pages:
        response = LOOPBACK.get(live.url + path, headers=bob, timeout=60)
        assert response.status_code in (200, 400, 404), (path, response.status_code)
        given = tuple(part for part in re.split(r"[/?=&+]", path) if len(part) >= 6) + tuple(refs)
        found = leaks(response, secrets, given)
        assert not found, (path, found, response.text[:500])
    assert "hr-quokka" in LOOPBACK.get(live.url + "/ui/", headers=alice(key), timeout=60).text
    health = LOOPBACK.get(live.url + "/health", timeout=60).json()
    assert health["status"] == "ok" and "tables" not in health and "last_run" not in health


def test_the_store_filters_in_the_query_so_top_k_stays_full(shared_index: Settings) -> None:
    from thoth.embedders import get_embedder

    store = Store(shared_index)
    handbook_only = store.reading(Collections(frozenset({"handbook"}), all_but=False))
    not_hidden = store.reading(Collections(frozenset({*HIDDEN, "quokka-notes"}), all_but=True))  # alice wrote it
    vector = get_embedder(shared_index).embed_queries(["quokka payroll ledger entry"])[0]
    everything = nearest(store, vector, 10)
    assert any(h.chunk.source_id == "hr-quokka" for h in everything)
    assert set(HIDDEN) <= {h.chunk.source_id for h in bm25(store, "quokka zorblax", 10)}
    for view, allowed in ((handbook_only, {"handbook"}), (not_hidden, {"handbook", "caching-fundamentals"})):
        in_memory = nearest(view, vector, 10)  # the held copy, masked
        assert len(in_memory) == 10 and {h.chunk.source_id for h in in_memory} <= allowed
        # the same search through LanceDB's prefilter (a match makes it a filtered query): the same hits
        through_lance = nearest(view, vector, 10, {"content_type": ["text", "code", "diff", "table"]})
        assert [h.chunk_id for h in through_lance] == [h.chunk_id for h in in_memory]
        words = bm25(view, "quokka payroll zorblax counter cache request time off", 10)
        assert words and {h.chunk.source_id for h in words} <= allowed
        assert {s.source_id for s in view.find(Source)} == allowed
        assert view.count_of(Chunk, {"source_id": "hr-quokka"}) == 0
        assert view.tree_pointer("hr-quokka") is None and store.tree_pointer("hr-quokka") is not None
