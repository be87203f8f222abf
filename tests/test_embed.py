"""The embedder's two backends: ONNX (onnxruntime, no torch) against sentence-transformers on torch.

Tolerances (measured on the CI machine, AVX2, with margin):
- onnx fp32 vs torch: cosine >= 0.99999 per text and max |difference| <= 1e-5 per component
  (measured: 1 - cosine <= 1.2e-7, max |difference| ~2e-7).
- onnx int8 vs onnx fp32: cosine >= 0.97 per text, mean >= 0.98 (measured: min ~0.978,
  mean ~0.99). Dynamic quantisation scales activations per batch, so int8 vectors also
  depend slightly on which texts share a batch; fp32 ones do not.

The export is shared by the whole test session through the repository's cache dir (`.thoth/`,
gitignored): the first run exports (about 10-15 s), later runs reuse the files.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from thoth.config import Settings
from thoth.embed import BUNDLED_MODEL, resolve_model
from thoth.embedders import get_embedder
from thoth.embedders.local import OnnxEmbedder, SentenceTransformerEmbedder
from thoth.embedders.onnx_export import export_onnx, onnx_path

REPO = Path(__file__).resolve().parents[1]
CACHE_DIR = REPO / ".thoth"

FP32_MIN_COSINE = 0.99999
FP32_MAX_ABS = 1e-5
INT8_MIN_COSINE = 0.97
INT8_MEAN_COSINE = 0.98

_LONG_PROSE = " ".join(
    f"Section {i} explains how the ingest job plans work, compares hashes and writes only changed rows."
    for i in range(40)
)  # ~700 word pieces: cut at 256

TEXTS = [
    "hi",
    "LanceDB",
    "How do I build an IVF_PQ index over the chunks table?",
    "Reciprocal rank fusion combines the keyword list and the vector list without tuning weights.",
    "def mean_pool(hidden, mask):\n    w = mask[..., None]\n    return (hidden * w).sum(1) / w.sum(1)\n",
    "SELECT chunk_id, text FROM chunks WHERE source_id = 'handbook' ORDER BY chunk_index LIMIT 10;",
    '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "search"}}',
    "Der schnelle braune Fuchs springt über den faulen Hund, während es draußen regnet.",
    "La recherche hybride combine BM25 et la similarité cosinus sur des vecteurs normalisés.",
    "東京は日本の首都であり、多くの企業の本社がある。",
    "Привет! Это короткий текст на русском языке о поиске документов.",
    "مرحبا بالعالم، هذا نص قصير باللغة العربية.",
    "Emoji and symbols: 🚀 ✓ ∑ x² ≤ 42 — done.",
    "   leading and trailing whitespace   \n\n",
    "UPPER CASE SHOUTING ABOUT CITATIONS AND PAGE NUMBERS",
    "word " * 400,  # > 256 word pieces, all the same
    " ".join(f"token{i}" for i in range(300)),  # > 256 word pieces, all different
    _LONG_PROSE,
    "The RAPTOR tree clusters leaf chunks with a Gaussian mixture, summarises each cluster and repeats. " * 3,
    "a",
    "1234567890 3.14159 2026-11-21T13:30:00Z",
]


@pytest.fixture(scope="session")
def model():
    return resolve_model(BUNDLED_MODEL)


@pytest.fixture(scope="session")
def fp32_path(model):
    return export_onnx(model, CACHE_DIR, int8=False)


@pytest.fixture(scope="session")
def int8_path(model, fp32_path):
    return export_onnx(model, CACHE_DIR, int8=True)


@pytest.fixture(scope="session")
def torch_embedder(model):
    return SentenceTransformerEmbedder(model, batch_size=8)


@pytest.fixture(scope="session")
def onnx_fp32(model, fp32_path):
    return OnnxEmbedder(model, fp32_path, batch_size=8)


@pytest.fixture(scope="session")
def onnx_int8(model, int8_path):
    return OnnxEmbedder(model, int8_path, batch_size=8)


@pytest.fixture(scope="session")
def vectors(torch_embedder, onnx_fp32, onnx_int8):
    return {
        "torch": torch_embedder.embed(TEXTS),
        "fp32": onnx_fp32.embed(TEXTS),
        "int8": onnx_int8.embed(TEXTS),
    }


def test_texts_exercise_truncation(onnx_fp32):
    lengths = [len(e.ids) for e in onnx_fp32._tok.encode_batch(TEXTS)]
    assert max(lengths) == 256  # cut at max_seq_length, specials included (not tokenizer.json's 128)
    assert sum(n == 256 for n in lengths) >= 3
    assert min(lengths) <= 4


def test_onnx_fp32_matches_torch(vectors):
    torch_v, onnx_v = vectors["torch"], vectors["fp32"]
    assert torch_v.shape == onnx_v.shape == (len(TEXTS), 384)
    cosine = (torch_v * onnx_v).sum(axis=1)
    worst = int(cosine.argmin())
    assert cosine.min() >= FP32_MIN_COSINE, (cosine.min(), TEXTS[worst][:60])
    assert np.abs(torch_v - onnx_v).max() <= FP32_MAX_ABS


def test_onnx_int8_close_to_fp32(vectors):
    cosine = (vectors["int8"] * vectors["fp32"]).sum(axis=1)
    assert cosine.min() >= INT8_MIN_COSINE, (cosine.min(), TEXTS[int(cosine.argmin())][:60])
    assert cosine.mean() >= INT8_MEAN_COSINE


@pytest.mark.parametrize("kind", ["torch", "fp32", "int8"])
def test_unit_length_float32(vectors, kind):
    v = vectors[kind]
    assert v.dtype == np.float32
    assert np.all(np.isfinite(v))
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)


def test_empty_input(torch_embedder, onnx_fp32, onnx_int8):
    for embedder in (torch_embedder, onnx_fp32, onnx_int8):
        out = embedder.embed([])
        assert out.shape == (0, embedder.dim) == (0, 384)
        assert out.dtype == np.float32


def test_order_and_batching_do_not_change_fp32_vectors(model, fp32_path, vectors):
    # Sorting by length inside a batch must hand each vector back to its own text.
    one_by_one = np.vstack([OnnxEmbedder(model, fp32_path, batch_size=1).embed([t]) for t in TEXTS[:8]])
    np.testing.assert_allclose(one_by_one, vectors["fp32"][:8], atol=1e-5)
    unsorted = OnnxEmbedder(model, fp32_path, batch_size=5, sort_by_length=False).embed(TEXTS)
    np.testing.assert_allclose(unsorted, vectors["fp32"], atol=1e-5)
    reversed_v = OnnxEmbedder(model, fp32_path, batch_size=64).embed(TEXTS[::-1])
    np.testing.assert_allclose(reversed_v[::-1], vectors["fp32"], atol=1e-5)


def test_truncation_at_max_seq_length(onnx_fp32):
    head = "alpha " * 140  # 140 word pieces: past 128, inside 254
    assert len(onnx_fp32._tok.encode(head, add_special_tokens=False).ids) == 140
    a, b, c = onnx_fp32.embed([head + " cats " * 300, head + " dogs " * 300, head + " cats " * 300 + " dogs" * 50])
    assert float(a @ c) > 0.99999  # text past 254 word pieces is cut
    assert float(a @ b) < 0.999  # pieces 129..254 still count: no truncation at 128


def test_embedder_attributes(torch_embedder, onnx_fp32, onnx_int8):
    for embedder in (torch_embedder, onnx_fp32, onnx_int8):
        assert embedder.model_name == BUNDLED_MODEL
        assert embedder.dim == 384
        assert embedder.max_tokens == 254


def test_get_embedder_picks_backend(fp32_path, int8_path):
    onnx = get_embedder(Settings(embed_backend="onnx", cache_dir=str(CACHE_DIR)))
    int8 = get_embedder(Settings(embed_backend="onnx", embed_int8=True, cache_dir=str(CACHE_DIR)))
    torch = get_embedder(Settings(embed_backend="torch"))
    assert isinstance(onnx, OnnxEmbedder) and onnx.onnx_path == fp32_path
    assert isinstance(int8, OnnxEmbedder) and int8.onnx_path == int8_path
    assert isinstance(torch, SentenceTransformerEmbedder)
    assert onnx.model_name == int8.model_name == torch.model_name == BUNDLED_MODEL
    assert get_embedder(Settings(embed_backend="onnx", cache_dir=str(CACHE_DIR))) is onnx  # loaded once


def test_export_is_reused(model, fp32_path, int8_path):
    assert fp32_path == onnx_path(model, CACHE_DIR) and fp32_path.name == "model.onnx"
    assert int8_path.name == "model.int8.onnx"
    before = (fp32_path.stat().st_mtime_ns, int8_path.stat().st_mtime_ns)
    assert export_onnx(model, CACHE_DIR, int8=True) == int8_path
    assert export_onnx(model, CACHE_DIR) == fp32_path
    assert (fp32_path.stat().st_mtime_ns, int8_path.stat().st_mtime_ns) == before
    assert not list(fp32_path.parent.glob(".*.tmp"))  # no temp files left behind


def _run(code: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("THOTH_")}
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("int8", [False, True])
def test_onnx_runtime_path_imports_no_torch(fp32_path, int8_path, int8):
    code = f"""
import sys
from thoth.config import Settings
from thoth.embedders import get_embedder
e = get_embedder(Settings(embed_backend="onnx", embed_int8={int8}, cache_dir={str(CACHE_DIR)!r}))
v = e.embed(["no torch here", "def f(): pass"])
assert v.shape == (2, 384), v.shape
heavy = sorted({{"torch", "transformers", "sentence_transformers"}} & set(sys.modules))
assert not heavy, heavy
print("ok", e.onnx_path.name)
"""
    proc = _run(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["ok", "model.int8.onnx" if int8 else "model.onnx"]


def test_cli_export_reuses_cache(fp32_path, int8_path):
    proc = subprocess.run(
        [sys.executable, "-m", "thoth.embedders.onnx_export", "--int8", "--cache-dir", str(CACHE_DIR)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert str(fp32_path) in proc.stdout and str(int8_path) in proc.stdout


def test_the_local_providers_choose_the_backend() -> None:
    assert (Settings.from_env({}).embed_backend, Settings.from_env({}).embed_int8) == ("onnx", False)
    int8 = Settings.from_env({"THOTH_EMBED_PROVIDER": "local-int8"})
    assert (int8.embed_provider, int8.embed_backend, int8.embed_int8) == ("local", "onnx", True)
    torch = Settings.from_env({"THOTH_EMBED_PROVIDER": "Sentence-Transformers"})
    assert (torch.embed_provider, torch.embed_backend, torch.embed_int8) == ("local", "torch", False)


def test_first_use_exports_in_a_child_process(tmp_path: Path) -> None:
    """A fresh cache: get_embedder exports the model (torch) in a child; this process never imports torch."""
    code = f"""
import sys
from thoth.config import Settings
from thoth.embedders import get_embedder
e = get_embedder(Settings(cache_dir={str(tmp_path / "cache")!r}))
assert e.embed(["exported on first use"]).shape == (1, 384)
assert "torch" not in sys.modules, "torch imported in the serving process"
print(e.onnx_path)
"""
    proc = _run(code)
    assert proc.returncode == 0, proc.stderr
    exported = Path(proc.stdout.strip())
    assert exported.is_file() and exported.is_relative_to(tmp_path / "cache")
    assert (exported.parent / "export.json").is_file()
    # The weights in a file beside the graph (onnxruntime maps it: a cheaper start), readable like the graph.
    weights = exported.parent / json.loads((exported.parent / "export.json").read_text())["weights"]
    assert weights.is_file() and weights.stat().st_size > 10 * exported.stat().st_size
    assert stat.S_IMODE(weights.stat().st_mode) == stat.S_IMODE(exported.stat().st_mode)
    assert not list(exported.parent.glob(".*.tmp"))
