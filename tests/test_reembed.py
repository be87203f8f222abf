"""`python -m ingest --reembed` (thoth/writes/reembed.py, thoth/store/reembed.py): an index built with the
bundled model moves to another one (the test endpoint's model cut to 128 dimensions, with prompts,
through the openai provider), stopped and resumed, read by a live server on loopback meanwhile."""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import (
    ONNX_CACHE,
    REPO_ROOT,
    TREE_TUNING,
    LiveServer,
    call,
    ingest_command,
    job_env,
    run_ingest,
    tree_settings,
    write_topic_corpus,
)
from tests.embedding_server import SERVED_MODEL, EmbeddingServer
from thoth import app as app_module
from thoth.config import Settings
from thoth.embedders import get_embedder
from thoth.records import Chunk, TreeNode
from thoth.retrieval.search import hybrid_search
from thoth.store import ModelMismatch, Store, StoreError
from thoth.store.metadata import model_values
from thoth.writes.chunking import embed_text
from thoth.writes.reembed import reembed
from thoth.writes.writer import Writer

QUERIES = ["how do tides follow the moon", "baking bread with sourdough", "stars and their spectra"]
NEW = f"openai:{SERVED_MODEL}"


@pytest.fixture(scope="module")
def endpoint() -> Iterator[EmbeddingServer]:
    with EmbeddingServer(truncate_to=128, slow_seconds=0.4) as server:
        yield server


def new_settings(db: Path, endpoint: EmbeddingServer, **overrides: object) -> Settings:
    """The "new model": the test endpoint's vectors cut to 128 dimensions, with e5-style prompts."""
    values: dict[str, object] = {
        "embed_provider": "openai",
        "embed_url": endpoint.base_url,
        "embed_model": SERVED_MODEL,
        "embed_dimensions": 128,
        "embed_query_prompt": "query: ",
        "embed_document_prompt": "passage: ",
        "cache_dir": str(ONNX_CACHE),
    }
    return tree_settings(db, **(values | overrides))


def new_env(settings: Settings, endpoint: EmbeddingServer) -> dict[str, str]:
    return job_env(
        THOTH_DB_URI=settings.db_uri,
        THOTH_EMBED_PROVIDER="openai",
        THOTH_EMBED_URL=endpoint.base_url,
        THOTH_EMBED_MODEL=SERVED_MODEL,
        THOTH_EMBED_DIMENSIONS="128",
        THOTH_EMBED_QUERY_PROMPT="query: ",
        THOTH_EMBED_DOCUMENT_PROMPT="passage: ",
    )


# Four texts a batch, one batch at a time: the small index takes several staged batches
SMALL_BATCHES = {"thoth.embed.REMOTE_EMBED_BATCH": 4, "thoth.embed.REMOTE_CONCURRENCY": 1}


@pytest.fixture
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SMALL_BATCHES.items():
        monkeypatch.setattr(name, value)


def ranking(settings: Settings, query: str) -> list[tuple[str, float]]:
    hits = hybrid_search(Store(settings), get_embedder(settings), query, 8).hits
    return [(hit.chunk_id, round(hit.score, 4)) for hit in hits]


def searched(live: LiveServer, query: str) -> list[tuple[str, float]]:
    result = call(live, "search_handbook", {"query": query})
    assert not result["isError"], result
    return [(hit["source"], hit["similarity"]) for hit in result["structuredContent"]["results"]]


@pytest.fixture
def built(tmp_path: Path) -> tuple[Path, Settings]:
    corpus = write_topic_corpus(tmp_path / "corpus")
    old = tree_settings(tmp_path / "db", cache_dir=str(ONNX_CACHE))
    summary = Writer(old).run(str(corpus), name="topics")
    assert not summary.failed and summary.tree and summary.tree.built, summary.render()
    return corpus, old


def test_stopped_and_resumed_while_a_server_answers_from_the_old_vectors_then_ranks_as_a_fresh_ingest(
    endpoint: EmbeddingServer,
    built: tuple[Path, Settings],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    small_batches: None,
) -> None:
    corpus, old = built
    new = new_settings(Path(old.db_uri), endpoint)
    stop, batches = threading.Event(), []

    def stop_after_three(table: str, rows: int) -> None:
        batches.append((table, rows))
        if len(batches) == 3:
            stop.set()  # the job's SIGTERM handler does this

    with LiveServer(old) as live:
        before = {q: searched(live, q) for q in QUERIES}
        first = reembed(new, stop=stop, after_batch=stop_after_three)
        assert first.interrupted and not first.switched and first.embedded["chunks"] == 12
        assert {q: searched(live, q) for q in QUERIES} == before  # the old vectors still answer
        with pytest.raises(ModelMismatch, match=r"python -m ingest --reembed"):
            Store(new).metadata.check_model(NEW, 128, ("query: ", "passage: "))

        during: list[bool] = []

        def ask_the_server(table: str, rows: int) -> None:
            if not during:  # mid-way through the resumed run, before the switch
                during.append({q: searched(live, q) for q in QUERIES} == before)

        second = reembed(new, after_batch=ask_the_server)
        assert during == [True]
        monkeypatch.setattr(app_module, "MODEL_RECHECK_SECONDS", 0.0)  # the running server checks again now
        refused = call(live, "search_handbook", {"query": QUERIES[0]})
        assert refused["isError"] and "python -m ingest --reembed" in refused["content"][0]["text"], refused
    assert second.switched and not second.restarted
    total = second.total["chunks"]
    assert second.embedded["chunks"] == total - 12  # continued where the first run stopped, not restarted
    assert second.embedded["tree_nodes"] == second.total["tree_nodes"] > 0

    store = Store(new)
    assert store.metadata.index_model() == (NEW, 128) and store.metadata.index_prompts() == ("query: ", "passage: ")
    assert store.calibration.floor() is not None and store.reembedding.target() is None
    with pytest.raises(ModelMismatch, match=r"run `python -m ingest --reembed` with these settings"):
        Store(old).metadata.check_model(get_embedder(old).model_name, 384)
    nodes = store.node_vector_search(get_embedder(new).embed_queries(["tides"])[0], 3, {"source_id": "topics"})
    assert nodes and all(isinstance(n, TreeNode) for n in nodes)  # tree nodes searched with the new model

    fresh = new_settings(tmp_path / "fresh", endpoint)
    assert not Writer(fresh).run(str(corpus), name="topics").failed
    assert Store(fresh).calibration.floor() == store.calibration.floor()
    for query in QUERIES:
        assert ranking(new, query) == ranking(fresh, query), query

    with LiveServer(new) as live:
        assert searched(live, QUERIES[0])[0][1] is not None  # vector search with the new model


def test_a_killed_job_continues_where_it_stopped(endpoint: EmbeddingServer, built: tuple[Path, Settings]) -> None:
    _, old = built
    new = new_settings(Path(old.db_uri), endpoint)
    env = new_env(new, endpoint)
    endpoint.script[:] = ["slow"] * 200  # each batch waits 0.4 s at the endpoint: time to kill mid-way
    try:
        job = subprocess.Popen(
            ingest_command("--reembed", patches=SMALL_BATCHES, **TREE_TUNING), cwd=REPO_ROOT, env=env
        )
        deadline = time.monotonic() + 120
        staged = 0
        while staged < 8 and time.monotonic() < deadline and job.poll() is None:
            time.sleep(0.1)
            try:
                staged = Store(new).reembedding.counts().get("chunks", (0, 0))[0]
            except Exception:  # the staging table is being created
                staged = 0
        job.send_signal(signal.SIGKILL)
        job.wait(timeout=30)
    finally:
        endpoint.script.clear()
    assert job.returncode == -signal.SIGKILL, "the job ended before it was killed"
    staged, total = Store(new).reembedding.counts()["chunks"]
    assert 8 <= staged < total
    # not switched: the old model serves
    assert Store(old).metadata.index_model() == (get_embedder(old).model_name, 384)

    again = run_ingest("--reembed", env=env)
    assert again.returncode == 0, again.stderr
    assert f"embedded {total - staged:,} chunks" in again.stdout, again.stdout
    assert "switched: the index now uses" in again.stdout
    assert Store(new).metadata.index_model() == (NEW, 128)
    assert "(128 dimensions); nothing to do" in run_ingest("--reembed", env=env).stdout


def test_no_index_is_a_clear_error(endpoint: EmbeddingServer, tmp_path: Path) -> None:
    done = run_ingest("--reembed", env=new_env(new_settings(tmp_path / "none", endpoint), endpoint), **TREE_TUNING)
    assert done.returncode == 1 and "no index" in done.stderr and "python -m ingest --source" in done.stderr


def test_the_ann_index_is_trained_again_for_the_new_dimension(
    endpoint: EmbeddingServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("thoth.store.indexes.VECTOR_INDEX_MIN_ROWS", 256)
    old = tree_settings(tmp_path / "db", cache_dir=str(ONNX_CACHE), tree_build=False)
    summary = Writer(old).run(str(write_topic_corpus(tmp_path / "corpus", files_per_topic=18)), name="topics")
    assert not summary.failed, summary.render()
    before = Store(old).indexes.vector_index()
    assert before is not None and before.indexed_rows >= 256, "the corpus is too small to train an ANN index"
    new = new_settings(Path(old.db_uri), endpoint, tree_build=False)
    assert reembed(new).switched
    store = Store(new)
    after = store.indexes.vector_index()
    assert after is not None and after.unindexed_rows == 0
    assert after.indexed_rows == store.row_counts(["chunks"])["chunks"]
    assert store.table("chunks").schema.field("vector").type.list_size == 128
    assert "vector_old" not in store.table("chunks").schema.names
    assert ranking(new, QUERIES[0])  # searched through the new index


def test_chunks_written_during_the_migration_stop_the_switch_and_the_next_run_embeds_them(
    endpoint: EmbeddingServer, built: tuple[Path, Settings]
) -> None:
    corpus, old = built
    new = new_settings(Path(old.db_uri), endpoint)
    writing = tree_settings(Path(old.db_uri), cache_dir=str(ONNX_CACHE), tree_build=False)
    (corpus / "late.md").write_text("# Late page\n\nThe lighthouse keeper logs every passing ship at dawn.\n")

    def an_old_job_writes(table: str, rows: int) -> None:
        if table == "tree_nodes" and not Store(old).find(Chunk, {"key": "late.md"}, fields=[]):
            assert not Writer(writing).run(str(corpus), name="topics").failed  # the old settings may still write

    with pytest.raises(StoreError, match=r"rows of chunks were written while re-embedding: run `python -m ingest"):
        reembed(new, after_batch=an_old_job_writes)
    assert Store(old).metadata.index_model()[0] == get_embedder(old).model_name  # nothing switched
    assert "vector_next" in Store(old).table("chunks").schema.names  # the stopped switch's column

    again = reembed(new)
    assert again.switched and 0 < again.embedded["chunks"] <= 2 and again.embedded["tree_nodes"] == 0
    store = Store(new)
    assert store.table("chunks").count_rows("vector IS NULL") == 0
    assert {"vector_next", "vector_old"}.isdisjoint(store.table("chunks").schema.names)
    assert ranking(new, "lighthouse keeper ships")[0][0] in {c.chunk_id for c in store.find(Chunk, {"key": "late.md"})}


def test_a_run_stopped_after_the_switch_has_its_cleanup_finished_by_the_next(
    endpoint: EmbeddingServer, built: tuple[Path, Settings]
) -> None:
    _, old = built
    new = new_settings(Path(old.db_uri), endpoint)
    model, store = get_embedder(new), Store(new)
    target = model_values(model.model_name, model.dim, model.prompts.pair)
    staging = store.reembedding
    staging.begin(target, model.dim)
    for table in ("chunks", "tree_nodes"):  # what reembed() stages, then its switch without the cleanup
        for batch in staging.pending(table, 64):
            texts = [embed_text(r.get("section"), r["text"]) for r in batch]
            staging.stage(table, [r["id"] for r in batch], [r["doc_id"] for r in batch], model.embed_documents(texts))
    staging.switch(target, None)
    assert "vector_old" in store.table("chunks").schema.names and store.metadata.index_model() == (NEW, 128)

    done = reembed(new)
    assert done.already and "nothing to do" in done.render()
    assert "vector_old" not in Store(new).table("chunks").schema.names
    assert "vector_old" not in Store(new).table("tree_nodes").schema.names
    assert ranking(new, QUERIES[0])
