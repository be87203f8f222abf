"""The bucket path as an operator meets it (issue 21), on the GCS emulator started the way docs/gcs.md
says (`python scripts/emulator.py`, versioned buckets in memory): one-line errors for a database
bucket that is not there, citations that open the generation they cite, topics under a prefix.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pytest

from examples.pdfgen import write_text_pdf
from tests.conftest import LOOPBACK, REPO_ROOT, LiveServer, call, free_port, job_env, run_ingest, write_corpus
from tests.test_gcs import _service_account_key, _verify_v4_signature
from thoth.app import Thoth
from thoth.config import Settings
from thoth.errors import NotFound
from thoth.gcs import storage_client
from thoth.mcp.server import create_app
from thoth.records import Chunk
from thoth.retrieval import citations
from thoth.retrieval.citations import resolve_citation
from thoth.retrieval.topics import list_topics
from thoth.store import Store, StoreError
from thoth.writes.writer import Writer

BUCKET = "shelf"
MISSING = "gs://no-such-bucket/lancedb"


@dataclass
class Emulator:
    host: str
    process: subprocess.Popen
    files: Path

    def env(self, **extra: str) -> dict[str, str]:
        return job_env(STORAGE_EMULATOR_HOST=self.host, **extra)


def start_emulator(port: int, log: Path, *args: str) -> subprocess.Popen:
    """`python scripts/emulator.py` as docs/gcs.md starts it; returns once it printed its export line."""
    out = log.open("w")
    process = subprocess.Popen(
        [sys.executable, "scripts/emulator.py", "--port", str(port), *args],
        cwd=REPO_ROOT,
        stdout=out,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 60
    while "export STORAGE_EMULATOR_HOST" not in log.read_text():
        assert process.poll() is None and time.monotonic() < deadline, log.read_text()
        time.sleep(0.1)
    return process


@pytest.fixture(scope="module")
def emulator(onnx_cache: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    files = tmp_path_factory.mktemp("operator")
    write_corpus(files / "handbook")
    port = free_port()
    process = start_emulator(
        port, files / "emulator.log", "--bucket", BUCKET, "--upload", f"{BUCKET}/handbook={files / 'handbook'}"
    )
    assert f"export STORAGE_EMULATOR_HOST=http://127.0.0.1:{port}" in (files / "emulator.log").read_text()
    yield Emulator(f"http://127.0.0.1:{port}", process, files)
    process.terminate()
    process.wait(timeout=30)


def settings_for(emulator: Emulator, **extra: str) -> Settings:
    return Settings.from_env(emulator.env(THOTH_DB_URI=f"gs://{BUCKET}/lancedb", **extra))


# -- a database bucket that is not there: one line, exit 1 ---------------------------------------------


def test_missing_db_bucket_is_one_error_line(emulator: Emulator) -> None:
    run = run_ingest("--source", str(emulator.files / "handbook"), "--db", MISSING, env=emulator.env())
    assert run.returncode == 1, run.stderr
    lines = [line for line in run.stderr.splitlines() if not line.startswith('{"event": "progress"')]
    assert lines == [
        "error: bucket gs://no-such-bucket does not exist (database gs://no-such-bucket/lancedb): create it "
        "(terraform apply, or `gcloud storage buckets create gs://no-such-bucket`) or point THOTH_DB_URI (--db) "
        "at an existing bucket"
    ], run.stderr


def test_missing_db_bucket_in_the_store_and_the_server(emulator: Emulator) -> None:
    settings = Settings.from_env(emulator.env(THOTH_DB_URI=MISSING))
    with pytest.raises(StoreError, match="bucket gs://no-such-bucket does not exist"):
        Store(settings).tables.names()
    with LiveServer(settings) as server:
        health = LOOPBACK.get(f"{server.url}/health", timeout=30)
        assert health.status_code == 503 and "gs://no-such-bucket does not exist" in health.text, health.text
        result = call(server, "search_handbook", {"query": "time off"})
        assert result["isError"] and "gs://no-such-bucket does not exist" in result["content"][0]["text"], result


def test_missing_db_bucket_is_found_at_once(emulator: Emulator) -> None:
    """Issue 40: the warm-up and /health ask the bucket before Lance, which retries a missing one for seconds."""
    settings = Settings.from_env(emulator.env(THOTH_DB_URI=MISSING))
    app = Thoth(settings)
    started = time.monotonic()
    app.warm_up(background=False)
    assert time.monotonic() - started < 3 and "gs://no-such-bucket does not exist" in app.embedder_state
    with LiveServer(settings, create_app(settings, app, warm_up=False)) as server:
        started = time.monotonic()
        health = LOOPBACK.get(f"{server.url}/health", timeout=30)
        assert time.monotonic() - started < 3, "/health waited on Lance's retries"
        assert health.status_code == 503 and "gs://no-such-bucket does not exist" in health.json()["reason"]


def test_unreachable_storage_endpoint_is_named(emulator: Emulator) -> None:
    env = job_env(STORAGE_EMULATOR_HOST=f"http://127.0.0.1:{free_port()}")  # nothing listens there
    run = run_ingest("--source", str(emulator.files / "handbook"), "--db", MISSING, env=env)
    assert run.returncode == 1
    errors = [line for line in run.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "cannot reach the storage endpoint for gs://no-such-bucket" in errors[0], run.stderr
    assert "Traceback" not in run.stderr


# -- topics: the first folder below the source's prefix ------------------------------------------------


def test_topics_on_a_bucket_are_folders_below_the_prefix(emulator: Emulator) -> None:
    settings = settings_for(emulator)
    Writer(settings).run(f"gs://{BUCKET}/handbook", name="handbook")
    topics = {t.topic: t for t in list_topics(Store(settings)).topics}
    assert set(topics) == {"engineering", "people", "reports", "(top level)"}, topics
    assert topics["engineering"].file_count == 2 and topics["(top level)"].file_count == 1  # index.md


# -- citations open the generation they cite --------------------------------------------------------------


@dataclass
class Cited:
    settings: Settings
    public_pem: bytes
    bucket: object
    first: int  # the generation the citation names
    second: int  # the generation that replaced it
    ref: str


def cite_then_replace(emulator: Emulator, bucket_name: str, versioned: bool, monkeypatch: pytest.MonkeyPatch) -> Cited:
    """A PDF ingested and cited (signed with a new service-account key), then replaced by another version and
    ingested again."""
    key_file = emulator.files / "signer.json"
    public_pem = _service_account_key(key_file)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key_file))  # the credentials that sign
    citations._signer.cache_clear()  # loaded once per process: here, once per key
    settings = settings_for(emulator)
    client = storage_client(settings)
    bucket = client.bucket(bucket_name)
    if not bucket.exists():
        bucket.versioning_enabled = versioned
        client.create_bucket(bucket)
    old_pdf, new_pdf = emulator.files / "tides-v1.pdf", emulator.files / "tides-v2.pdf"
    write_text_pdf(old_pdf, ["Spring tides at the pier reached four metres in March."], title="Tides")
    write_text_pdf(new_pdf, ["Revised: spring tides at the pier reached three metres in March."], title="Tides")

    def upload(path: Path) -> int:
        blob = bucket.blob("papers/tides.pdf")
        blob.upload_from_filename(str(path))
        blob.reload()
        return blob.generation

    first = upload(old_pdf)
    Writer(settings).run(f"gs://{bucket_name}/papers", name=bucket_name)
    ref = Store(settings).first(Chunk, {"key": "papers/tides.pdf", "source_id": bucket_name}, fields=["source_ref"])
    assert f"version_id={first}" in ref.source_ref
    second = upload(new_pdf)
    Writer(settings).run(f"gs://{bucket_name}/papers", name=bucket_name)
    assert second != first
    return Cited(settings, public_pem, bucket, first, second, ref.source_ref)


def test_citation_on_a_versioned_bucket_opens_the_cited_generation(
    emulator: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    cited = cite_then_replace(emulator, BUCKET, True, monkeypatch)  # terraform makes the bucket versioned
    citation = resolve_citation(Store(cited.settings), cited.settings, source_ref=cited.ref)
    assert citation.version == str(cited.first) and citation.version_available is True
    assert citation.document.version == str(cited.second) and citation.note is None  # the indexed generation
    url = citation.url.split("#", 1)[0]
    query = _verify_v4_signature(url, cited.public_pem)  # the generation is part of what was signed
    assert query["generation"] == str(cited.first)
    parts = urlsplit(url)
    served = LOOPBACK.get(f"{emulator.host}{parts.path}?{parts.query}", headers={"Host": parts.netloc})
    assert served.content == (emulator.files / "tides-v1.pdf").read_bytes()  # what was quoted, not the new one

    current = resolve_citation(Store(cited.settings), cited.settings, bucket=BUCKET, key="papers/tides.pdf")
    assert current.version == str(cited.second) and current.version_available is True
    assert dict(parse_qsl(urlsplit(current.url).query))["generation"] == str(cited.second)


def test_citation_says_when_its_generation_is_gone(emulator: Emulator, monkeypatch: pytest.MonkeyPatch) -> None:
    cited = cite_then_replace(emulator, "plain-shelf", False, monkeypatch)  # replacing drops the old bytes
    store = Store(cited.settings)
    gone = resolve_citation(store, cited.settings, source_ref=cited.ref)
    assert gone.version == str(cited.first) and gone.version_available is False
    assert f"generation {cited.first} of gs://plain-shelf/papers/tides.pdf is gone" in (gone.note or "")
    assert f"current object (generation {cited.second})" in (gone.note or "")
    assert dict(parse_qsl(urlsplit(gone.url).query))["generation"] == str(cited.second)

    cited.bucket.blob("papers/tides.pdf").delete()  # and then the object itself, without an event
    with pytest.raises(NotFound, match="gs://plain-shelf/papers/tides.pdf is no longer in the bucket"):
        resolve_citation(store, cited.settings, source_ref=cited.ref)


# -- the events route: 503 while not configured, 401 for a caller it does not know -------------------------


def test_events_route_statuses(emulator: Emulator) -> None:
    data = base64.b64encode(json.dumps({"bucket": BUCKET, "name": "papers/x.pdf", "generation": "1"}).encode())
    attributes = {"eventType": "OBJECT_METADATA_UPDATE", "bucketId": BUCKET, "objectId": "papers/x.pdf",
                  "objectGeneration": "1", "payloadFormat": "JSON_API_V1"}  # fmt: skip
    body = {"message": {"attributes": attributes, "data": data.decode(), "messageId": "m1"}, "subscription": "s"}
    with LiveServer(settings_for(emulator)) as server:  # neither THOTH_ADMIN_TOKEN nor THOTH_INTERNAL_IDENTITIES
        refused = LOOPBACK.post(f"{server.url}/internal/gcs-events", json=body, headers={"Authorization": "Bearer x"})
        assert refused.status_code == 503 and "THOTH_ADMIN_TOKEN" in refused.json()["error"]
    with LiveServer(settings_for(emulator, THOTH_ADMIN_TOKEN="operator-token")) as server:
        url = f"{server.url}/internal/gcs-events"
        assert LOOPBACK.post(url, json=body).status_code == 401  # no token
        assert LOOPBACK.post(url, json=body, headers={"Authorization": "Bearer wrong"}).status_code == 401
        good = {"Authorization": "Bearer operator-token"}
        assert LOOPBACK.post(url, content=b"{}", headers=good).status_code == 400  # not a Pub/Sub push
        ignored = LOOPBACK.post(url, json=body, headers=good)
        assert ignored.status_code == 200 and ignored.json()["status"] == "ignored", ignored.text


def test_a_bucket_source_without_credentials_is_one_line(tmp_path: Path) -> None:
    """Issue 40: `python -m ingest --source gs://bucket/prefix` with no Google credentials: exit 1, one line."""
    env = job_env(HOME=str(tmp_path), GCE_METADATA_HOST="127.0.0.1:9", GCE_METADATA_IP="127.0.0.1:9")
    run = run_ingest("--source", "gs://bucket/prefix", "--db", str(tmp_path / "db"), env=env)
    assert run.returncode == 1, run.stderr
    lines = [line for line in run.stderr.splitlines() if not line.startswith('{"event": "progress"')]
    assert len(lines) == 1 and lines[0].startswith("error: no Google credentials"), run.stderr
