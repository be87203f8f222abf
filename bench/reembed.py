"""What `python -m ingest --reembed` costs, against embedding the same texts alone in the same process.

    python -m bench.reembed [--chunks 1000] [--passes 2] [--int8]

Builds an index of about `--chunks` chunks (bench.ingest's generated Markdown) with the bundled model
(ONNX), then re-embeds it `--passes` times, alternating between two model identities of the same
local model: with e5-style prompts (`query: ` / `passage: `) and without, so every pass re-embeds every
chunk. Before each pass the same chunk texts are embedded alone (the CPU limit). Prints per pass the
seconds per 1,000 chunks of the re-embedding (staging, switch, BM25 fold-in) and of the model alone,
and their ratio: what the migration adds to the embedding itself. Trees are off (tree nodes are a
small share of an index's texts).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from bench.ingest import CHUNKS_PER_FILE, chunk_texts, write_corpus
from thoth.config import Settings
from thoth.embedders import get_embedder
from thoth.writes.reembed import reembed
from thoth.writes.writer import Writer

PROMPTS = {"embed_query_prompt": "query: ", "embed_document_prompt": "passage: "}
NONE = {"embed_query_prompt": "", "embed_document_prompt": ""}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.reembed", description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=1000)
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--int8", action="store_true", help="the dynamically quantised model")
    args = parser.parse_args(argv)
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "corpus"
        write_corpus(folder, max(1, round(args.chunks / CHUNKS_PER_FILE)))
        base = Settings.from_env(
            {}, db_uri=str(Path(tmp) / "db"), tree_build=False, embed_backend="onnx", embed_int8=args.int8
        )
        started = time.perf_counter()
        summary = Writer(base).run(str(folder), name="bench")
        ingest_s = time.perf_counter() - started
        texts = chunk_texts(base, folder)
        n = len(texts)
        print(f"index: {n} chunks, ingest {ingest_s:.1f} s ({1000 * ingest_s / n:.1f} s per 1,000 chunks)")
        assert not summary.failed, summary.render()
        print("pass  prompts  reembed s/1k  model alone s/1k  ratio  load")
        for p in range(args.passes):
            prompts = PROMPTS if p % 2 == 0 else NONE
            settings = replace(base, **prompts)
            model = get_embedder(settings)
            started = time.perf_counter()
            model.embed_documents(texts)
            alone = time.perf_counter() - started
            started = time.perf_counter()
            result = reembed(settings, embedder=model)
            took = time.perf_counter() - started
            assert result.switched and result.embedded["chunks"] == n, result.render()
            load = os.getloadavg()[0]
            label = "e5" if prompts is PROMPTS else "none"
            per_k = f"{1000 * took / n:>12.1f}  {1000 * alone / n:>16.1f}"
            print(f"{p + 1:>4}  {label:>7}  {per_k}  {took / alone:.2f}  {load:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
