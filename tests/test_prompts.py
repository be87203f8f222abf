"""Query and document prompts (THOTH_EMBED_QUERY_PROMPT / _DOCUMENT_PROMPT): applied on each side of the
Embedder's split, seen on the wire by a real OpenAI-compatible server, and recorded with the index."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import ONNX_CACHE, make_settings, write_corpus
from tests.embedding_server import SERVED_MODEL, EmbeddingServer
from thoth.app import Thoth
from thoth.config import Settings
from thoth.embed import CachedEmbedder, Prompts
from thoth.embedders import get_embedder
from thoth.retrieval.search import hybrid_search
from thoth.store import ModelMismatch, Store
from thoth.writes.writer import Writer

E5 = {"embed_query_prompt": "query: ", "embed_document_prompt": "passage: "}


@pytest.fixture(scope="module")
def endpoint() -> Iterator[EmbeddingServer]:
    with EmbeddingServer() as server:
        yield server


def served(db: Path, server: EmbeddingServer, **overrides: object) -> Settings:
    values = {"embed_provider": "openai", "embed_url": server.base_url, "embed_model": SERVED_MODEL}
    return make_settings(db, cache_dir=str(ONNX_CACHE), **(values | overrides))


def test_settings_read_the_prompts_verbatim() -> None:
    env = {"THOTH_EMBED_QUERY_PROMPT": "query: ", "THOTH_EMBED_DOCUMENT_PROMPT": "passage: "}
    settings = Settings.from_env(env)
    assert (settings.embed_query_prompt, settings.embed_document_prompt) == ("query: ", "passage: ")
    assert Settings.from_env({}).embed_query_prompt == ""


def test_each_side_gets_its_prompt_and_no_prompt_is_embed_itself() -> None:
    plain = get_embedder(make_settings(Path("unused"), cache_dir=str(ONNX_CACHE)))
    e5 = get_embedder(make_settings(Path("unused"), cache_dir=str(ONNX_CACHE), **E5))
    assert plain.prompts == Prompts() and e5.prompts == Prompts("query: ", "passage: ")
    text = ["rotate the signing key"]
    assert np.array_equal(plain.embed_queries(text), plain.embed(text))
    assert np.array_equal(plain.embed_documents(text), plain.embed(text))
    assert np.array_equal(e5.embed_queries(text), plain.embed(["query: rotate the signing key"]))
    assert np.array_equal(e5.embed_documents(text), plain.embed(["passage: rotate the signing key"]))
    cached = CachedEmbedder(e5, size=4)
    first, again = cached.embed_queries(text), cached.embed_queries(text)
    assert np.array_equal(first, again) and (cached.hits, cached.misses) == (1, 1)
    assert not np.array_equal(cached.embed(text), first)  # the raw text is another entry, another vector
    assert cached.misses == 2


def test_ingest_sends_documents_with_their_prompt_and_search_sends_the_query_with_its(
    endpoint: EmbeddingServer, tmp_path: Path
) -> None:
    settings = served(tmp_path / "db", endpoint, **E5)
    summary = Writer(settings).run(str(write_corpus(tmp_path / "corpus")), name="handbook")
    assert not summary.failed, summary.render()
    sent = [text for body in endpoint.requests for text in body["input"]]
    documents = [t for t in sent if t != "dimension probe"]
    assert documents and all(t.startswith("passage: ") for t in documents)
    store = Store(settings)
    assert store.metadata.index_model() == (f"openai:{SERVED_MODEL}", 384)
    assert store.metadata.index_prompts() == ("query: ", "passage: ")
    endpoint.requests.clear()
    hits = hybrid_search(store, get_embedder(settings), "how many vacation days", 3).hits
    assert hits and [body["input"] for body in endpoint.requests] == [["query: how many vacation days"]]


def test_an_index_without_prompts_records_none_and_refuses_a_process_with_prompts(tmp_path: Path) -> None:
    plain = make_settings(tmp_path / "db", cache_dir=str(ONNX_CACHE))
    assert not Writer(plain).run(str(write_corpus(tmp_path / "corpus")), name="handbook").failed
    assert Store(plain).metadata.index_prompts() == ("", "")
    assert Store(plain).metadata.get("index.embed_prompts") is None  # an index without prompts reads as before
    prompted = make_settings(tmp_path / "db", cache_dir=str(ONNX_CACHE), **E5)
    with pytest.raises(ModelMismatch) as refused:
        Thoth(prompted).embedder()
    said = str(refused.value)
    assert "query prompt 'query: ', document prompt 'passage: '" in said
    assert "run `python -m ingest --reembed` with these settings" in said, said


def test_a_process_without_the_index_s_prompts_is_told_which_to_set(endpoint: EmbeddingServer, tmp_path: Path) -> None:
    settings = served(tmp_path / "db", endpoint, **E5)
    assert not Writer(settings).run(str(write_corpus(tmp_path / "corpus")), name="handbook").failed
    bare = served(tmp_path / "db", endpoint)
    with pytest.raises(
        ModelMismatch, match="THOTH_EMBED_QUERY_PROMPT='query: ' THOTH_EMBED_DOCUMENT_PROMPT='passage: '"
    ):
        Store(bare).metadata.check_model(f"openai:{SERVED_MODEL}", 384, ("", ""))
