"""The reader and writer roles over real HTTP: who sees and may call the tools that write the index.

A static-token server and a Google-token server (keys made here, certificates served on loopback, as in
tests/test_auth.py) over one writable index of the test corpus.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from tests.conftest import LiveServer, make_settings, write_corpus, write_docs
from tests.test_auth import AUDIENCE, CertsServer, Key, bearer, edge_token
from thoth.config import ConfigError, Settings
from thoth.mcp.auth import token_principal
from thoth.mcp.roles import Caller
from thoth.records import Session
from thoth.store import Store
from thoth.writes.writer import Writer

READER = "reader-token-0123456789abcdef"
READER2 = "second-reader-token-0123456789"
WRITER = "writer-token-0123456789abcdef"
ADMIN = "admin-token-0123456789abcdef"
DOC = "Guide dogs may come to the office on Fridays. Ask facilities for a water bowl."


@pytest.fixture(scope="module")
def writable(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """The test corpus as the job-managed `handbook` dataset, in an index these tests may write to."""
    root = write_corpus(tmp_path_factory.mktemp("corpus"))
    settings = make_settings(tmp_path_factory.mktemp("db") / "lancedb", tree_build=False)
    for folder, name in ((root, "handbook"), (write_docs(tmp_path_factory.mktemp("docs")), "docs")):
        summary = Writer(settings).run(str(folder), name=name)
        assert not summary.failed, summary.render()
    return settings


@pytest.fixture(scope="module")
def token_server(writable: Settings) -> Iterator[LiveServer]:
    settings = replace(
        writable, auth_mode="tokens", auth_tokens=(READER, READER2), auth_writer_tokens=(WRITER,), admin_token=ADMIN
    )
    with pytest.MonkeyPatch.context() as patch, LiveServer(settings) as live:
        patch.setattr("thoth.mcp.toolsets.raptor.MAX_DOCUMENT_BYTES", 4000)
        yield live


def tool_names(server: LiveServer, token: str | None = None) -> set[str]:
    response = server.rpc("tools/list", headers=bearer(token) if token else None)
    assert response.status_code == 200, response.text
    return {t["name"] for t in response.json()["result"]["tools"]}


def call(server: LiveServer, token: str | None, name: str, arguments: dict) -> dict:
    response = server.rpc(
        "tools/call", {"name": name, "arguments": arguments}, headers=bearer(token) if token else None
    )
    assert response.status_code == 200, response.text
    return response.json()["result"]


def test_a_reader_is_not_offered_write_tools(token_server: LiveServer) -> None:
    reader, writer = tool_names(token_server, READER), tool_names(token_server, WRITER)
    assert "ingest_document" in writer and "ingest_document" not in reader
    sources = {"add_source", "refresh_source", "remove_source", "list_runs", "get_run", "cancel_run"}
    assert "search_handbook" in reader and reader == writer - {"ingest_document"} - sources
    assert sources <= writer and not sources & reader  # managing sources is the writer's (issue 52)
    assert tool_names(token_server, ADMIN) == writer
    # the list_tools tool tells the same story
    listed = call(token_server, READER, "list_tools", {})["structuredContent"]["tools"]
    assert "ingest_document" not in {t["name"] for t in listed}
    # the writer's view keeps the truthful annotation
    tools = token_server.rpc("tools/list", headers=bearer(WRITER)).json()["result"]["tools"]
    ingest = next(t for t in tools if t["name"] == "ingest_document")
    assert ingest["annotations"]["readOnlyHint"] is False
    assert all(t["annotations"]["readOnlyHint"] for t in tools if t["name"].startswith("search"))


def test_a_reader_calling_a_write_tool_is_told_it_needs_the_writer_role(token_server: LiveServer) -> None:
    result = call(token_server, READER, "ingest_document", {"dataset_id": "notes", "file_content": DOC})
    assert result["isError"] and "writer role" in result["content"][0]["text"]
    assert call(token_server, READER, "list_datasets", {})["structuredContent"]["datasets"]  # reading works
    names = {d["id"] for d in call(token_server, WRITER, "list_datasets", {})["structuredContent"]["datasets"]}
    assert "notes" not in names  # nothing was written


def test_a_writer_writes(token_server: LiveServer) -> None:
    result = call(token_server, WRITER, "ingest_document", {"dataset_id": "office", "file_content": DOC})
    assert not result["isError"], result["content"][0]["text"]
    assert result["structuredContent"]["chunks"] >= 1
    hits = call(token_server, READER, "retrieve_documents", {"dataset_id": "office", "query": "guide dogs"})
    assert "Guide dogs" in hits["structuredContent"]["results"][0]["text"]


def test_job_managed_datasets_cannot_be_written_by_ingest_document(token_server: LiveServer) -> None:
    planted = {"dataset_id": "handbook", "source": "people/time-off.md", "file_content": "Time off is unlimited."}
    result = call(token_server, WRITER, "ingest_document", planted)
    assert result["isError"]
    message = result["content"][0]["text"]
    assert "handbook" in message and "ingest job" in message
    page = call(token_server, READER, "search_handbook", {"query": "request time off", "num_results": 1})
    assert "unlimited" not in str(page["structuredContent"])


def test_ingest_document_size_limit(token_server: LiveServer) -> None:
    result = call(token_server, WRITER, "ingest_document", {"dataset_id": "big", "file_content": "é" * 2500})
    message = result["content"][0]["text"]
    assert result["isError"] and "5000 bytes" in message and "split the document" in message
    assert "4000" in message
    assert len(message) < 300  # the document is not echoed


def test_auth_off_allows_everything(writable: Settings) -> None:
    with LiveServer(writable) as live:
        assert "ingest_document" in tool_names(live)


# -- per-caller state --------------------------------------------------------------------------


def test_each_caller_has_its_own_default_collection(token_server: LiveServer) -> None:
    def default(token: str) -> str | None:
        return call(token_server, token, "list_collections", {})["structuredContent"]["default_collection"]

    assert not call(token_server, READER, "set_default_collection", {"name": "docs"})["isError"]
    assert default(READER) == "docs" and default(READER2) is None
    assert call(token_server, READER, "search", {"query": "go client"})["structuredContent"]["collection"] == "docs"
    assert call(token_server, READER2, "search", {"query": "go client"})["structuredContent"]["collection"] is None
    call(token_server, READER2, "set_default_collection", {"name": "handbook"})
    assert default(READER) == "docs" and default(READER2) == "handbook"
    # kept in the index: a new server (another instance) agrees
    with LiveServer(token_server_settings(token_server)) as other:
        assert default_on(other, READER) == "docs"


def token_server_settings(server: LiveServer) -> Settings:
    return server.server.config.app.state.thoth.settings


def default_on(server: LiveServer, token: str) -> str | None:
    return call(server, token, "list_collections", {})["structuredContent"]["default_collection"]


def test_chat_sessions_belong_to_their_creator(token_server: LiveServer, writable: Settings) -> None:
    created = call(token_server, READER, "create_chat_session", {"dataset_id": "handbook", "title": "Mine"})
    assert not created["isError"], created
    session_id = created["structuredContent"]["session_id"]
    store = Store(writable)
    owner = Caller(token_principal(READER), writer=False).key
    stored = store.first(Session, {"session_id": session_id})
    assert stored is not None and stored.title == "Mine" and stored.owner == owner
    assert owner != Caller(token_principal(READER2), writer=False).key  # another caller's key owns no session


# -- THOTH_AUTH=google ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def key() -> Key:
    return Key("roles-key")


@pytest.fixture(scope="module")
def google_server(writable: Settings, key: Key) -> Iterator[LiveServer]:
    with CertsServer(key) as certs, pytest.MonkeyPatch.context() as patch:
        patch.setattr("thoth.mcp.auth.GOOGLE_CERTS_URL", certs.url)  # the test's signing keys
        settings = replace(
            writable,
            auth_mode="google",
            auth_audiences=(AUDIENCE,),
            auth_members=("domain:example.com",),
            auth_writers=("editor@example.com", "domain:docs.example"),
        )
        with LiveServer(settings) as live:
            yield live


def test_google_writers(google_server: LiveServer, key: Key) -> None:
    reader, editor, docs_team = (
        key.token("alice@example.com"),
        key.token("editor@example.com"),
        key.token("bob@docs.example"),
    )
    assert "ingest_document" not in tool_names(google_server, reader)
    assert "ingest_document" in tool_names(google_server, editor)
    assert "ingest_document" in tool_names(google_server, docs_team)  # a writer needs no separate membership
    result = call(google_server, reader, "ingest_document", {"dataset_id": "x", "file_content": DOC})
    assert result["isError"] and "writer role" in result["content"][0]["text"]


def test_behind_cloud_run_iam_only_listed_writers_write(writable: Settings) -> None:
    """THOTH_AUTH=off behind Cloud Run's IAM check (terraform's default): the edge-checked identity decides."""
    settings = replace(writable, auth_trust_edge=True, auth_writers=("editor@example.com",))
    with LiveServer(settings) as live:
        assert "ingest_document" not in tool_names(live, edge_token("alice@example.com"))
        assert "ingest_document" in tool_names(live, edge_token("editor@example.com"))
        assert "ingest_document" not in tool_names(live)  # no edge identity: a reader


def test_writer_settings() -> None:
    secret = f"# editors\n{WRITER}\n"  # a Secret Manager secret as the variable: one a line
    settings = Settings.from_env(
        {"THOTH_AUTH": "tokens", "THOTH_AUTH_TOKENS": READER, "THOTH_AUTH_WRITER_TOKENS": secret}
    )
    assert settings.auth_tokens == (READER,) and settings.auth_writer_tokens == (WRITER,)
    assert WRITER not in repr(settings)
    only_writers = Settings.from_env({"THOTH_AUTH": "tokens", "THOTH_AUTH_WRITER_TOKENS": WRITER})
    assert only_writers.auth_writer_tokens == (WRITER,)
    with pytest.raises(ConfigError, match="both"):
        Settings.from_env({"THOTH_AUTH": "tokens", "THOTH_AUTH_TOKENS": READER, "THOTH_AUTH_WRITER_TOKENS": READER})
    with pytest.raises(ConfigError, match="THOTH_AUTH_WRITER_TOKENS: every token"):
        Settings.from_env({"THOTH_AUTH_WRITER_TOKENS": "short"})
    google = Settings.from_env(
        {"THOTH_AUTH": "google", "THOTH_PUBLIC_URL": AUDIENCE, "THOTH_AUTH_WRITERS": "user:Ed@X.org"}
    )
    assert google.auth_writers == ("ed@x.org",)
