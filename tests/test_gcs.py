"""The research library on the GCS emulator, end to end.

PDFs uploaded to a bucket -> `python -m ingest --source gs://library/papers` (a separate process) ->
LanceDB tables in the same bucket -> the server (reading gs://) -> every research tool over HTTP;
then a later ingest the server sees without restart, bucket events pushed to /internal/gcs-events,
and the `missing` backfill.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from urllib.parse import parse_qsl, quote, urlsplit

import bibtexparser
import httpx
import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from examples.pdfgen import write_image_only_pdf, write_text_pdf, write_truncated_pdf
from tests.conftest import LOOPBACK, GcsEmulator, LiveServer, error_text, job_env, ok, run_ingest
from thoth.config import Settings
from thoth.errors import NotFound
from thoth.gcs import storage_client
from thoth.mcp.roles import LOCAL
from thoth.records import Document, to_row
from thoth.retrieval import citations
from thoth.store import Store
from thoth.store.maintenance import sweep_figures
from thoth.writes.writer import Writer

BUCKET = "library"
ADMIN = "test-admin-token"
SIGNER = "citations@thoth-test.iam.gserviceaccount.com"
PORTAL = "https://portal.example.org/docs"

ATTENTION = [
    "Attention mechanisms let a model weigh every position of the input. The transformer uses only attention.",
    "Multi-head attention runs several attention functions in parallel over projected queries and keys.",
    "Positional encodings with sines and cosines give the model the order of the tokens.",
]
HARBOUR = [
    "The harbour authority dredged the northern channel to admit deeper container ships.",
    "Tidal gauges at the pier recorded a record surge during the February storm.",
]
SIDECAR = "@article{harbour2021,\n  title = {Harbour Dredging Report},\n  author = {Quay, Pat},\n  year = {2021}\n}\n"


@dataclass
class Library:
    settings: Settings
    env: dict[str, str]
    bucket: object
    files: Path
    key_pem: bytes
    first_ingest: str

    def upload(self, key: str, path: Path) -> object:
        blob = self.bucket.blob(key)
        blob.upload_from_filename(str(path))
        blob.reload()
        return blob


def _service_account_key(path: Path) -> bytes:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    info = {
        "type": "service_account",
        "project_id": "thoth-test",
        "private_key_id": "0123456789abcdef",
        "private_key": pem.decode(),
        "client_email": SIGNER,
        "client_id": "1234567890",
        "token_uri": "https://oauth2.googleapis.com/token",
    }
    path.write_text(json.dumps(info))
    return key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


@pytest.fixture(scope="module")
def library(gcs_emulator: GcsEmulator, onnx_cache: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Library]:
    files = tmp_path_factory.mktemp("library")
    key_file = files / "signer.json"
    public_pem = _service_account_key(key_file)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key_file))  # the credentials that sign URLs
        citations._signer.cache_clear()  # loaded once per process: here, once per key
        yield _library(gcs_emulator, files, public_pem)


def _library(gcs_emulator: GcsEmulator, files: Path, public_pem: bytes) -> Library:
    env = job_env(
        STORAGE_EMULATOR_HOST=gcs_emulator.host,
        GCS_BUCKET_NAME=BUCKET,  # the seed's convention: the tables live in gs://library/lancedb
        THOTH_PDF_PASSWORD="hunter2",
        THOTH_ADMIN_TOKEN=ADMIN,
        THOTH_PORTAL_BASE_URL=PORTAL,
        THOTH_GCP_PROJECT="thoth-test",
    )
    settings = Settings.from_env(env)
    assert settings.db_uri == f"gs://{BUCKET}/lancedb"
    bucket = storage_client(settings).create_bucket(BUCKET)
    write_text_pdf(files / "attention.pdf", ATTENTION, title="Attention Everywhere", author="Ada Lovelace; Alan Turing")
    write_text_pdf(files / "harbour.pdf", HARBOUR, title="harbour.dvi")  # a placeholder title: BibTeX must guess
    write_text_pdf(files / "locked.pdf", ["The vault combination is kept on page one."], password="hunter2")
    write_image_only_pdf(files / "scan.pdf", pages=2)
    write_truncated_pdf(files / "broken.pdf")
    (files / "harbour.bib").write_text(SIDECAR)
    library = Library(settings, env, bucket, files, public_pem, "")
    for key, name in [
        ("papers/attention.pdf", "attention.pdf"),
        ("papers/archive/attention-copy.pdf", "attention.pdf"),  # the same bytes under a second key
        ("papers/harbour.pdf", "harbour.pdf"),
        ("papers/harbour.bib", "harbour.bib"),
        ("papers/locked.pdf", "locked.pdf"),
        ("papers/scan.pdf", "scan.pdf"),
        ("papers/broken.pdf", "broken.pdf"),
        ("elsewhere/outside.pdf", "harbour.pdf"),  # outside the ingested prefix
    ]:
        library.upload(key, files / name)
    run = run_ingest("--source", f"gs://{BUCKET}/papers", env=env)
    assert run.returncode == 0, run.stderr
    library.first_ingest = run.stdout
    return library


@pytest.fixture(scope="module")
def gcs_server(library: Library):
    with LiveServer(library.settings) as live:
        yield live


def hit_for(server: LiveServer, query: str, **arguments: object) -> dict:
    return ok(server, "search", {"query": query, "top_k": 3, **arguments})["hits"][0]


# -- ingest from the bucket into the bucket ------------------------------------------------------------


def test_ingest_job_reads_the_bucket_and_writes_tables_into_it(library: Library) -> None:
    out = library.first_ingest
    assert "4 ingested" in out and "2 failed" in out, out
    assert "no text layer" in out and "corrupt" in out
    names = {blob.name for blob in library.bucket.list_blobs(prefix="lancedb/")}
    for table in ("sources", "documents", "partitions", "chunks", "settings"):
        assert any(f"/{table}.lance/" in name for name in names), table
    rows = {d.key: to_row(d) for d in Store(library.settings).find(Document, {"source_id": BUCKET})}
    assert "elsewhere/outside.pdf" not in rows  # only the prefix was ingested
    blob = library.bucket.get_blob("papers/attention.pdf")
    row = rows["papers/attention.pdf"]
    assert row["version"] == str(blob.generation) and row["bucket"] == BUCKET
    assert row["doc_id"] == hashlib.sha256((library.files / "attention.pdf").read_bytes()).hexdigest()
    seed_id = f"gs://{BUCKET}/papers/attention.pdf?version_id={blob.generation}"
    assert row["object_id"] == hashlib.sha1(seed_id.encode()).hexdigest()
    # the same bytes under two keys: two documents rows, one copy of the chunks
    assert rows["papers/archive/attention-copy.pdf"]["doc_id"] == row["doc_id"]
    assert rows["papers/locked.pdf"]["status"] == "ok"  # THOTH_PDF_PASSWORD opened it


def test_second_run_changes_nothing(library: Library) -> None:
    versions = Store(library.settings).versions()
    summary = Writer(library.settings).run(f"gs://{BUCKET}/papers")
    assert summary.changed == 0 and summary.unchanged == 6
    assert Store(library.settings).versions() == versions


def test_ranking_columns_held_from_the_bucket_rank_as_read_ones(library: Library) -> None:
    # As on a large table (ids first, ranking columns held by row id), read from gs://: the same hits
    from tests.test_store_chunks import reading
    from thoth.embedders import get_embedder
    from thoth.retrieval.search import hybrid_search

    held, read = Store(library.settings), Store(library.settings)
    with reading():
        held.chunks.warm()
    assert held.chunks._ranking.held is not None and held.chunks._ranking.held[1] is not None
    embedder = get_embedder(library.settings)
    for query in ("multi-head attention", "harbour dredging channel"):
        with reading():
            served = hybrid_search(held, embedder, query, 3, documents=True).hits
        with reading(copy=False):
            expected = hybrid_search(read, embedder, query, 3, documents=True).hits
        assert served and [(h.chunk, h.score) for h in served] == [(h.chunk, h.score) for h in expected]


# -- the research tools over HTTP ------------------------------------------------------------------------


def test_tools_are_listed_with_seed_arguments(gcs_server: LiveServer) -> None:
    tools = {t["name"]: t for t in gcs_server.rpc("tools/list").json()["result"]["tools"]}
    research = {
        "ping", "list_collections", "set_default_collection", "list_collection_files", "search", "fetch",
        "resolve_citation", "fetch_document_chunks", "fetch_chunk_document", "fetch_chunk_partition",
        "fetch_chunk_bibtex",
    }  # fmt: skip
    assert research <= set(tools)
    search = tools["search"]["inputSchema"]["properties"]
    assert (search["top_k"]["default"], search["prefetch_k"]["default"]) == (5, 40)
    assert set(search) >= {"query", "collection", "retrieval_mode", "include_partition", "include_document"}
    files = tools["list_collection_files"]["inputSchema"]["properties"]
    assert (files["limit"]["default"], files["batch_size"]["default"]) == (200, 256)
    assert tools["set_default_collection"]["annotations"]["readOnlyHint"] is False


def test_ping_health_and_collections(gcs_server: LiveServer) -> None:
    assert ok(gcs_server, "ping", {})["status"] == "ok"
    health = LOOPBACK.get(f"{gcs_server.url}/health").json()
    assert health["status"] == "ok" and health["db_uri"] == f"gs://{BUCKET}/lancedb"
    assert health["table_versions"]["chunks"] >= 1
    collections = ok(gcs_server, "list_collections", {})["collections"]
    library = next(c for c in collections if c["collection"] == BUCKET)
    assert (library["documents"], library["failed"], library["kind"]) == (4, 2, "pdf")
    assert library["uri"] == f"gs://{BUCKET}/papers"


def test_list_collection_files_pages_in_key_order(gcs_server: LiveServer) -> None:
    first = ok(gcs_server, "list_collection_files", {"collection": BUCKET, "limit": 4})
    rest = ok(gcs_server, "list_collection_files", {"collection": BUCKET, "limit": 4, "offset": first["next_offset"]})
    assert first["total"] == 6 and first["next_offset"] == 4 and rest["next_offset"] is None
    files = first["files"] + rest["files"]
    assert [f["key"] for f in files] == sorted(f["key"] for f in files)
    by_key = {f["key"]: f for f in files}
    assert by_key["papers/scan.pdf"]["status"] == "failed" and "no text layer" in by_key["papers/scan.pdf"]["error"]
    assert by_key["papers/attention.pdf"]["title"] == "Attention Everywhere"
    assert by_key["papers/attention.pdf"]["source_ref"].startswith("doc://library/papers/attention.pdf?version_id=")


def test_search_hits_carry_source_and_citation(gcs_server: LiveServer, library: Library) -> None:
    result = ok(
        gcs_server,
        "search",
        {"query": "tidal surge at the pier", "include_partition": True, "include_document": True},
    )
    assert result["collection"] is None and result["retrieval_mode"] == "hybrid"
    hit = result["hits"][0]
    blob = library.bucket.get_blob("papers/harbour.pdf")
    assert hit["key"] == "papers/harbour.pdf" and hit["bucket"] == BUCKET and hit["pages"] == [2]
    assert hit["source_ref"] == f"doc://library/papers/harbour.pdf?version_id={blob.generation}#page=2"
    assert (
        hit["source_id"]
        == hashlib.sha1(f"gs://{BUCKET}/{hit['key']}?version_id={blob.generation}".encode()).hexdigest()
    )
    assert hit["source"] == "gs://library/papers/harbour.pdf" and hit["doc_hash"] == hit["document_id"]
    assert len(hit["chunk_hash"]) == 64 and len(hit["partition_hash"]) == 64
    assert hit["partition"]["page_start"] == 2 and "February storm" in hit["partition"]["text"]
    assert [o["key"] for o in hit["document"]["objects"]] == ["papers/harbour.pdf"]
    cosine = ok(gcs_server, "search", {"query": "tidal surge at the pier", "retrieval_mode": "cosine"})
    assert cosine["hits"][0]["id"] == hit["id"] and cosine["hits"][0]["similarity"] > 0.3


def test_same_pdf_under_two_keys_is_one_document_known_under_both(gcs_server: LiveServer) -> None:
    hits = ok(gcs_server, "search", {"query": "multi-head attention", "top_k": 10, "include_document": True})["hits"]
    attention = [h for h in hits if h["document"]["title"] == "Attention Everywhere"]
    assert len({h["id"] for h in attention}) == len(attention) == 3  # each chunk once, not once per key
    keys = [o["key"] for o in attention[0]["document"]["objects"]]
    assert keys == ["papers/archive/attention-copy.pdf", "papers/attention.pdf"]


def test_fetch_and_the_chunk_bundles(gcs_server: LiveServer) -> None:
    hit = hit_for(gcs_server, "sines and cosines positional encoding")
    fetched = ok(gcs_server, "fetch", {"id": hit["id"]})
    assert fetched["text"] == hit["text"] and fetched["source_ref"] == hit["source_ref"]

    bundle = ok(gcs_server, "fetch_chunk_document", {"id": hit["id"]})
    assert bundle["chunk"]["id"] == hit["id"] and bundle["total_chunks"] == 3
    assert [c["chunk_index"] for c in bundle["chunks"]] == [0, 1, 2]
    by_id = ok(gcs_server, "fetch_document_chunks", {"document_id": hit["document_id"]})
    by_key = ok(gcs_server, "fetch_document_chunks", {"bucket": BUCKET, "key": "papers/archive/attention-copy.pdf"})
    assert (
        [c["id"] for c in by_id["chunks"]] == [c["id"] for c in by_key["chunks"]] == [c["id"] for c in bundle["chunks"]]
    )

    part = ok(gcs_server, "fetch_chunk_partition", {"id": hit["id"]})
    assert part["partition"]["pages"] == [3] and part["partition"]["kind"] == "page"
    assert [c["id"] for c in part["chunks"]] == [hit["id"]]
    assert all(c["page_start"] == 3 for c in part["chunks"])


def test_bibtex_parses_and_a_sidecar_overrides_it(gcs_server: LiveServer) -> None:
    attention = ok(gcs_server, "fetch_chunk_bibtex", {"id": hit_for(gcs_server, "multi-head attention")["id"]})
    assert attention["bibtex_source"] == "generated"
    library = bibtexparser.parse_string(attention["bibtex"])
    assert not library.failed_blocks and len(library.entries) == 1
    entry = library.entries[0]
    assert entry.fields_dict["title"].value == "Attention Everywhere"
    assert entry.fields_dict["author"].value == "Lovelace, Ada and Turing, Alan"
    harbour = ok(gcs_server, "fetch_chunk_bibtex", {"id": hit_for(gcs_server, "dredged northern channel")["id"]})
    assert harbour["bibtex_source"] == "sidecar" and harbour["bibtex"] == SIDECAR
    assert bibtexparser.parse_string(harbour["bibtex"]).entries[0].key == "harbour2021"


def _verify_v4_signature(url: str, public_pem: bytes) -> dict[str, str]:
    """Rebuild the V4 string-to-sign from the URL and check the RSA signature against the public key."""
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    signature = bytes.fromhex(query.pop("X-Goog-Signature"))
    canonical_query = "&".join(f"{quote(k, safe='')}={quote(v, safe='')}" for k, v in sorted(query.items()))
    canonical_request = "\n".join(
        ["GET", parts.path, canonical_query, f"host:{parts.netloc}\n", "host", "UNSIGNED-PAYLOAD"]
    )
    scope = query["X-Goog-Credential"].split("/", 1)[1]
    string_to_sign = "\n".join(
        ["GOOG4-RSA-SHA256", query["X-Goog-Date"], scope, hashlib.sha256(canonical_request.encode()).hexdigest()]
    )
    public_key = serialization.load_pem_public_key(public_pem)
    public_key.verify(signature, string_to_sign.encode(), padding.PKCS1v15(), hashes.SHA256())  # raises if forged
    return query


def test_resolve_citation_signed_url_is_well_formed_and_verifies(gcs_server: LiveServer, library: Library) -> None:
    hit = hit_for(gcs_server, "dredged northern channel")
    arguments = {"source_ref": hit["source_ref"], "highlight": "northern channel", "mode": "signed"}
    citation = ok(gcs_server, "resolve_citation", arguments)
    assert citation["mode"] == "signed" and citation["page_start"] == 1 and citation["highlight_applied"]
    url, fragment = citation["url"].split("#", 1)
    assert fragment == "page=1&search=northern%20channel"
    assert url.startswith("https://storage.googleapis.com/library/papers/harbour.pdf?")
    query = _verify_v4_signature(url, library.key_pem)
    assert query["X-Goog-Algorithm"] == "GOOG4-RSA-SHA256"
    assert query["X-Goog-Credential"].startswith(f"{SIGNER}/") and query["X-Goog-Credential"].endswith(
        "/auto/storage/goog4_request"
    )
    assert query["X-Goog-Expires"] == "900" and query["X-Goog-SignedHeaders"] == "host"
    assert len(query["X-Goog-Date"]) == 16 and query["X-Goog-Date"].endswith("Z")
    # the emulator checks no signature, but serves the object at the signed path and query
    parts = urlsplit(url)
    served = LOOPBACK.get(
        f"{library.settings.storage_emulator_host}{parts.path}?{parts.query}", headers={"Host": parts.netloc}
    )
    assert served.content == (library.files / "harbour.pdf").read_bytes()


def test_resolve_citation_other_modes(gcs_server: LiveServer, library: Library) -> None:
    blob = library.bucket.get_blob("papers/attention.pdf")
    ref = f"doc://library/papers/attention.pdf?version_id={blob.generation}#page=2"
    gs = ok(gcs_server, "resolve_citation", {"source_ref": ref, "mode": "gs"})
    assert gs["url"] == "gs://library/papers/attention.pdf" and gs["page_start"] == 2
    portal = ok(
        gcs_server,
        "resolve_citation",
        {"bucket": BUCKET, "key": "papers/attention.pdf", "page_start": 2, "page_end": 3, "highlight": "heads"},
    )
    assert portal["mode"] == "portal"  # the default where a portal is configured
    portal = ok(gcs_server, "resolve_citation", {"source_ref": ref, "mode": "portal", "highlight": "multi-head"})
    assert (
        portal["url"]
        == f"{PORTAL}/library/papers/attention.pdf?version_id={blob.generation}&page=2&highlight=multi-head#page=2"
    )
    assert "file" in error_text(gcs_server, "resolve_citation", {"source_ref": ref, "mode": "file"})
    assert "3 pages" in error_text(gcs_server, "resolve_citation", {"source_ref": ref, "page": 9})


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("fetch", {"id": "00000000-0000-0000-0000-000000000000"}, "no chunk with id"),
        ("fetch_chunk_partition", {"id": "nope"}, "no chunk with id"),
        ("fetch_chunk_bibtex", {"id": "' OR 1=1 --"}, "no chunk with id"),
        ("fetch_chunk_document", {"id": "nope", "collection": "nowhere"}, "available: library"),
        ("list_collection_files", {"collection": "nowhere"}, "collection 'nowhere' does not exist"),
        ("search", {"query": "attention", "collection": "nowhere"}, "available: library"),
        ("search", {"query": "attention", "retrieval_mode": "bm25"}, "retrieval_mode"),
        ("set_default_collection", {"name": "nowhere"}, "does not exist"),
        ("resolve_citation", {"source_ref": "s3://library/a.pdf"}, "malformed"),
        ("resolve_citation", {"source_ref": "doc://library/papers/a.pdf#p=2"}, "bad fragment"),
        ("resolve_citation", {"source_ref": "doc://library/papers/nothing.pdf"}, "no ingested document"),
        ("resolve_citation", {"bucket": BUCKET}, "source_ref"),
        ("resolve_citation", {"source_ref": "doc://library/papers/harbour.pdf", "mode": "ftp"}, "mode"),
        ("fetch_document_chunks", {"key": "papers/harbour.pdf"}, "document_id, or bucket and key"),
        ("fetch_document_chunks", {"document_id": "0" * 64}, "no ingested document"),
    ],
)
def test_bad_requests_are_clear_tool_errors(gcs_server: LiveServer, tool: str, arguments: dict, expected: str) -> None:
    assert expected in error_text(gcs_server, tool, arguments)


# -- state that changes: defaults, later ingests, events, backfill -----------------------------------------------


def test_set_default_collection_is_persisted_in_the_index(gcs_server: LiveServer, library: Library) -> None:
    assert ok(gcs_server, "set_default_collection", {"name": BUCKET})["default_collection"] == BUCKET
    mine = f"research.default_collection/{LOCAL.key}"  # auth off: the one local caller
    assert Store(library.settings).metadata.get(mine) == BUCKET  # another connection sees it
    listed = ok(gcs_server, "list_collections", {})
    assert listed["default_collection"] == BUCKET
    assert ok(gcs_server, "list_collection_files", {})["collection"] == BUCKET  # no collection: the default
    assert ok(gcs_server, "search", {"query": "vault combination"})["collection"] == BUCKET


def test_server_sees_a_later_ingest_without_restart(gcs_server: LiveServer, library: Library) -> None:
    before = LOOPBACK.get(f"{gcs_server.url}/health").json()["table_versions"]
    write_text_pdf(library.files / "glacier.pdf", ["Glacier retreat doubled the meltwater in the valley."], title="Ice")
    library.upload("papers/glacier.pdf", library.files / "glacier.pdf")
    summary = Writer(library.settings).run(f"gs://{BUCKET}/papers")  # another connection: the batch job's
    assert summary.ingested == ["papers/glacier.pdf"]
    after = LOOPBACK.get(f"{gcs_server.url}/health").json()["table_versions"]
    assert after["chunks"] > before["chunks"] and after["documents"] > before["documents"]
    assert hit_for(gcs_server, "glacier meltwater")["key"] == "papers/glacier.pdf"


def _push(
    server: LiveServer, event_type: str, blob_name: str, generation: int, message_id: str, **kw
) -> httpx.Response:
    data = {"bucket": BUCKET, "name": blob_name, "generation": str(generation)}
    body = {
        "message": {
            "attributes": {
                "eventType": event_type,
                "bucketId": BUCKET,
                "objectId": blob_name,
                "objectGeneration": str(generation),
                "payloadFormat": "JSON_API_V1",
            },
            "data": base64.b64encode(json.dumps(data).encode()).decode(),
            "messageId": message_id,
            "publishTime": "2026-11-21T12:00:00Z",
        },
        "subscription": "projects/thoth-test/subscriptions/thoth-events",
    }
    headers = kw.get("headers", {"Authorization": f"Bearer {ADMIN}"})
    return LOOPBACK.post(f"{server.url}/internal/gcs-events", json=body, headers=headers, timeout=30)


def _wait_processed(server: LiveServer, count: int) -> dict:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        status = LOOPBACK.get(f"{server.url}/internal/gcs-events", headers={"Authorization": f"Bearer {ADMIN}"}).json()
        if status["processed"] + status["failed"] >= count and status["pending"] == 0:
            assert status["failed"] == 0, status["recent"]
            return status
        time.sleep(0.1)
    raise AssertionError(f"events not processed: {status}")


def test_object_events_finalize_redeliver_delete(gcs_server: LiveServer, library: Library) -> None:
    assert _push(gcs_server, "OBJECT_FINALIZE", "papers/x.pdf", 1, "m0", headers={}).status_code == 401
    assert (
        _push(
            gcs_server, "OBJECT_FINALIZE", "papers/x.pdf", 1, "m0", headers={"Authorization": "Bearer no"}
        ).status_code
        == 401
    )
    bad = LOOPBACK.post(
        f"{gcs_server.url}/internal/gcs-events", content=b"{}", headers={"Authorization": f"Bearer {ADMIN}"}
    )
    assert bad.status_code == 400 and "Pub/Sub" in bad.json()["error"]
    assert _push(gcs_server, "OBJECT_METADATA_UPDATE", "papers/x.pdf", 1, "m1").json()["status"] == "ignored"

    write_text_pdf(
        library.files / "comet.pdf", ["The comet's tail pointed away from the sun all winter."], title="Comets"
    )
    blob = library.upload("papers/comet.pdf", library.files / "comet.pdf")
    started = time.perf_counter()
    response = _push(gcs_server, "OBJECT_FINALIZE", blob.name, blob.generation, "m2")
    assert response.status_code == 202 and time.perf_counter() - started < 5  # the work runs after the answer
    done = _wait_processed(gcs_server, 1)["processed"]
    assert hit_for(gcs_server, "comet tail pointing away from the sun")["key"] == "papers/comet.pdf"
    event_run = Store(library.settings).recent_runs(BUCKET, limit=1)[0]  # the ingest history has the event
    assert (event_run.trigger, event_run.added, event_run.failed) == ("event", 1, 0)
    assert (
        event_run.started_by.startswith("OBJECT_FINALIZE gs://library/papers/comet.pdf#")
        and "m2" in event_run.started_by
    )

    versions = LOOPBACK.get(f"{gcs_server.url}/health").json()["table_versions"]
    assert _push(gcs_server, "OBJECT_FINALIZE", blob.name, blob.generation, "m2").status_code == 202  # redelivered
    _wait_processed(gcs_server, done + 1)
    assert LOOPBACK.get(f"{gcs_server.url}/health").json()["table_versions"] == versions  # nothing written

    generation = blob.generation
    blob.delete()
    assert _push(gcs_server, "OBJECT_DELETE", "papers/comet.pdf", generation, "m3").status_code == 202
    _wait_processed(gcs_server, done + 2)
    keys = {f["key"] for f in ok(gcs_server, "list_collection_files", {"collection": BUCKET})["files"]}
    assert "papers/comet.pdf" not in keys
    assert Store(library.settings).recent_runs(BUCKET, limit=1)[0].removed == 1
    assert all(h["key"] != "papers/comet.pdf" for h in ok(gcs_server, "search", {"query": "comet tail"})["hits"])
    versions = LOOPBACK.get(f"{gcs_server.url}/health").json()["table_versions"]
    assert _push(gcs_server, "OBJECT_DELETE", "papers/comet.pdf", generation, "m3").status_code == 202  # again
    _wait_processed(gcs_server, done + 3)
    assert LOOPBACK.get(f"{gcs_server.url}/health").json()["table_versions"] == versions


def test_missing_backfill_ingests_only_unknown_objects(library: Library) -> None:
    write_text_pdf(library.files / "delta.pdf", ["River deltas grow where sediment outpaces the tide."], title="Deltas")
    library.upload("papers/delta.pdf", library.files / "delta.pdf")
    library.bucket.blob("papers/broken.pdf").delete()  # gone without an event: `missing` leaves its row alone
    run = run_ingest("missing", "--source", f"gs://{BUCKET}/papers", env=library.env)
    assert run.returncode == 0, run.stderr
    assert "1 ingested" in run.stdout and "0 removed" in run.stdout, run.stdout
    keys = {d.key for d in Store(library.settings).find(Document, {"source_id": BUCKET}, fields=["key"])}
    assert {"papers/delta.pdf", "papers/broken.pdf"} <= keys
    summary = Writer(library.settings).run(f"gs://{BUCKET}/papers")  # the full run removes it
    assert summary.removed == ["papers/broken.pdf"] and not summary.ingested


def test_signing_lifetime_is_the_constant(library: Library, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(citations, "SIGNED_URL_SECONDS", 60)
    url, expires = citations.signed_url(library.settings, BUCKET, "papers/harbour.pdf")
    assert dict(parse_qsl(urlsplit(url).query))["X-Goog-Expires"] == "60"
    assert timedelta(seconds=50) < expires - expires.now(expires.tzinfo) <= timedelta(seconds=60)


def test_bibtex_sidecar_events_rewrite_their_document(gcs_server: LiveServer, library: Library) -> None:
    """An edited papers/harbour.bib re-ingests papers/harbour.pdf with the new entry; once it is deleted, the
    document's BibTeX is generated again from the PDF."""
    admin = {"Authorization": f"Bearer {ADMIN}"}
    done = LOOPBACK.get(f"{gcs_server.url}/internal/gcs-events", headers=admin).json()["processed"]
    edited = SIDECAR.replace("Harbour Dredging Report", "Harbour Dredging Report, Revised")
    (library.files / "harbour.bib").write_text(edited)
    blob = library.upload("papers/harbour.bib", library.files / "harbour.bib")
    assert _push(gcs_server, "OBJECT_FINALIZE", blob.name, blob.generation, "m-bib-1").status_code == 202
    _wait_processed(gcs_server, done + 1)
    harbour = ok(gcs_server, "fetch_chunk_bibtex", {"id": hit_for(gcs_server, "dredged northern channel")["id"]})
    assert (harbour["bibtex_source"], harbour["bibtex"]) == ("sidecar", edited)

    generation = blob.generation
    blob.delete()
    assert _push(gcs_server, "OBJECT_DELETE", "papers/harbour.bib", generation, "m-bib-2").status_code == 202
    _wait_processed(gcs_server, done + 2)
    harbour = ok(gcs_server, "fetch_chunk_bibtex", {"id": hit_for(gcs_server, "dredged northern channel")["id"]})
    assert harbour["bibtex_source"] == "generated" and "Revised" not in harbour["bibtex"]


def test_figure_pictures_in_the_bucket_no_chunk_names_are_swept(library: Library) -> None:
    """The index's figure pictures live in the bucket beside its tables; the sweep lists, keeps and deletes
    them there as in a folder (tests/test_maintenance.py)."""
    store = Store(library.settings)
    unnamed = hashlib.sha256(b"a picture no chunk names").hexdigest() + ".png"
    store.figures.put(unnamed, b"\x89PNG picture bytes")
    assert store.figures.get(unnamed) == b"\x89PNG picture bytes"
    assert unnamed in dict(store.figures.listed())
    assert sweep_figures(store, grace=timedelta(minutes=10)) == 0  # just written: perhaps a write in flight
    assert sweep_figures(store, grace=timedelta(0)) == 1
    assert unnamed not in dict(store.figures.listed())
    with pytest.raises(NotFound, match="not in the index's"):
        store.figures.get(unnamed)
    store.figures.remove(unnamed)  # gone already: nothing to do
