"""Exporting a local model to ONNX for the `local` provider (imports torch, in a child process).

`export_onnx` writes the graph once under `{cache_dir}/onnx/`; `export_in_subprocess` runs it as
`python -m thoth.embedders.onnx_export`, so the serving process never imports torch.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from thoth.config import Settings
from thoth.embed import EmbedderUnavailable, ModelRef, resolve_model

ONNX_OPSET = 17


def onnx_path(model: ModelRef, cache_dir: str | Path, int8: bool = False) -> Path:
    """Where `export_onnx` writes (or has written) the model; it may not exist yet."""
    folder = re.sub(r"[^A-Za-z0-9._-]+", "--", model.name).strip("-.") or "model"  # the model's name, path-safe
    return Path(cache_dir).expanduser() / "onnx" / folder / ("model.int8.onnx" if int8 else "model.onnx")


def _tmp_beside(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")


def _export_fp32(model: ModelRef, dest: Path) -> dict[str, Any]:
    """Trace the HF model to ONNX, then fuse it for onnxruntime; write `dest` atomically."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import warnings

    import torch
    import transformers

    # Eager attention traces to plain MatMul/Softmax with the padding mask as a graph input.
    transformers.utils.logging.disable_progress_bar()
    bert = transformers.AutoModel.from_pretrained(str(model.path), attn_implementation="eager").eval()

    class _Hidden(torch.nn.Module):
        def __init__(self, inner: torch.nn.Module):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):
            out = self.inner(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            return out.last_hidden_state

    # A padded dummy batch, so nothing that depends on "no padding" gets traced in as a constant.
    ids = torch.tensor([[101] + [1000 + i for i in range(14)] + [102], [101, 2000, 2001, 102] + [0] * 12])
    mask = (ids != 0).long()
    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes = {n: {0: "batch", 1: "sequence"} for n in [*names, "last_hidden_state"]}
    raw, fused = _tmp_beside(dest), _tmp_beside(dest)
    info: dict[str, Any] = {"torch": torch.__version__, "transformers": transformers.__version__}
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")  # tracer chatter from the legacy exporter
            torch.onnx.export(
                _Hidden(bert),
                (ids, mask, torch.zeros_like(ids)),
                str(raw),
                input_names=names,
                output_names=["last_hidden_state"],
                dynamic_axes=axes,
                opset_version=ONNX_OPSET,
                do_constant_folding=True,
                dynamo=False,  # the TorchScript exporter: needs `onnx`, not onnxscript
                external_data=False,
            )
        info["fused"] = _fuse_bert(raw, fused, bert.config)
        info["weights"] = _save_with_external_weights(fused if info["fused"] else raw, dest)
    finally:
        raw.unlink(missing_ok=True)
        fused.unlink(missing_ok=True)
    info["hidden_size"] = int(bert.config.hidden_size)
    return info


def _fuse_bert(src: Path, dest: Path, config: Any) -> dict[str, int]:
    """onnxruntime's BERT fusions (Attention, SkipLayerNorm, BiasGelu, EmbedLayerNorm), written to `dest`.

    Hardware-neutral graph rewrites (opt_level 0: no ORT-level, machine-specific ones). The fused
    graph is a little faster in fp32 and lets int8 quantise attention too (QAttention). Returns the
    fused operator counts, or {} (and writes nothing) when the fusion did not apply.
    """
    if getattr(config, "model_type", "") != "bert":
        return {}
    try:
        import logging

        from onnxruntime.transformers.optimizer import optimize_model

        logging.getLogger("onnxruntime.transformers").setLevel(logging.ERROR)
        fused = optimize_model(
            str(src),
            model_type="bert",
            num_heads=int(config.num_attention_heads),
            hidden_size=int(config.hidden_size),
            opt_level=0,
        )
        stats = {k: int(v) for k, v in fused.get_fused_operator_statistics().items() if v}
        if stats.get("Attention", 0) != int(config.num_hidden_layers):
            return {}  # partial fusion: keep the plain graph
        fused.save_model_to_file(str(dest))
        return stats
    except Exception:  # an optimizer that does not know this graph: the plain export works too
        return {}


def _save_with_external_weights(src: Path, dest: Path) -> str:
    """Write the graph at `src` as `dest` with its weights in a file beside it; returns that file's name.

    onnxruntime maps an external weights file instead of parsing the whole protobuf and copying every
    initializer out of it, which makes building the session, part of every cold start, several times
    cheaper (docs/benchmarks.md, "Cold start"); the vectors are the same. The weights are renamed into place
    before the graph that names them, and their name is unique to this export, so a process that
    opens `dest` never finds a missing or half-written weights file, even while another one exports.
    """
    import onnx

    weights = f"{dest.name}.{uuid.uuid4().hex[:12]}.weights"
    staging = _tmp_beside(dest)
    staging.mkdir()
    try:
        onnx.save_model(
            onnx.load(str(src)),
            str(staging / dest.name),
            save_as_external_data=True,
            all_tensors_to_one_file=True,
            location=weights,
            size_threshold=1024,  # small constants (shapes, axes) stay in the graph
        )
        shutil.copymode(staging / dest.name, staging / weights)  # onnx writes 0600: the image's user must read it
        os.replace(staging / weights, dest.parent / weights)
        os.replace(staging / dest.name, dest)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return weights


def _quantize_int8(src: Path, dest: Path) -> None:
    """Dynamic int8: weights quantised per output channel (per tensor loses far more: cosine ~0.90)."""
    import logging

    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    root = logging.getLogger()
    level = root.level
    root.setLevel(max(level, logging.ERROR))  # quiet its root-logger advice to pre-process first
    tmp = _tmp_beside(dest)
    try:
        quantize_dynamic(
            str(src),
            str(tmp),
            weight_type=QuantType.QInt8,
            per_channel=True,
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},  # fused ops lack shape info
        )
        os.replace(tmp, dest)
    finally:
        root.setLevel(level)
        tmp.unlink(missing_ok=True)


def export_onnx(model: ModelRef, cache_dir: str | Path, int8: bool = False) -> Path:
    """The model's ONNX file under `cache_dir`, exporting it first if missing; returns its path.

    Files appear atomically (written beside the target, then renamed), so processes starting
    together at worst export twice, and never read half a file.
    """
    fp32 = onnx_path(model, cache_dir, int8=False)
    target = onnx_path(model, cache_dir, int8=int8)
    if target.is_file():
        return target
    if model.path is None:
        raise EmbedderUnavailable(f"cannot export {model.name!r} to ONNX: no local model folder with its weights")
    fp32.parent.mkdir(parents=True, exist_ok=True)
    info: dict[str, Any] = {"model": model.name, "source": str(model.path), "opset": ONNX_OPSET}
    if not fp32.is_file():
        t0 = time.perf_counter()
        info |= _export_fp32(model, fp32)
        info["export_seconds"] = round(time.perf_counter() - t0, 2)
        meta = fp32.parent / "export.json"
        tmp = _tmp_beside(meta)
        tmp.write_text(json.dumps(info, indent=2) + "\n")
        os.replace(tmp, meta)
    if int8:
        _quantize_int8(fp32, target)
    return target


def export_in_subprocess(model: ModelRef, cache_dir: str | Path, int8: bool = False) -> Path:
    """The model's ONNX file under `cache_dir`, exported first (when missing) by a child process, so that this
    process never imports torch: torch's memory goes away with the child."""
    target = onnx_path(model, cache_dir, int8=int8)
    if target.is_file():
        return target
    cmd = [sys.executable, "-m", "thoth.embedders.onnx_export", "--model", model.name]  # the same ModelRef
    cmd += ["--cache-dir", str(Path(cache_dir).expanduser().resolve())] + (["--int8"] if int8 else [])
    # the child must import this same `thoth`, whatever the working directory it inherits
    package_root = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0 or not target.is_file():
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
        raise EmbedderUnavailable(f"exporting {model.name!r} to ONNX failed: {' | '.join(tail) or proc.returncode}")
    return target


def main(argv: list[str] | None = None) -> int:
    """`python -m thoth.embedders.onnx_export [--int8] [--model NAME] [--cache-dir DIR]`"""
    parser = argparse.ArgumentParser(prog="python -m thoth.embedders.onnx_export", description=__doc__)
    parser.add_argument("--int8", action="store_true", help="also write the dynamically quantised int8 model")
    parser.add_argument("--model", help="model name or folder (default: THOTH_EMBED_MODEL or the bundled model)")
    parser.add_argument("--cache-dir", help="cache folder (default: THOTH_CACHE_DIR or ./.thoth)")
    args = parser.parse_args(argv)
    settings = Settings.from_env()
    model = resolve_model(args.model or settings.embed_model)
    cache_dir = args.cache_dir or settings.cache_dir
    t0 = time.perf_counter()
    paths = [export_onnx(model, cache_dir, int8=False)]
    if args.int8:
        paths.append(export_onnx(model, cache_dir, int8=True))
    for path in paths:
        size = sum(f.stat().st_size for f in [path, *path.parent.glob(f"{path.name}.*.weights")])  # its weights too
        print(f"{path}  {size / 1e6:.1f} MB")
    print(f"{model.name}: ready in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
