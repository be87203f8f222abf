# syntax=docker/dockerfile:1
# One image for the Cloud Run service (`python -m thoth.mcp.server`, the default command) and the
# Cloud Run Job (`python -m ingest ...`): both embed with the same ONNX model, and the job on CPU is
# faster with onnxruntime than with torch, so neither needs torch. Torch is used only in the builder
# stage, to export the bundled all-MiniLM-L6-v2 to ONNX; the runtime stage never sees it.
#
#   docker build -t thoth .            (cloudbuild.yaml does this on Cloud Build)
#   docker run -p 8080:8080 -e THOTH_DB_URI=gs://BUCKET/lancedb thoth
#   docker run thoth python -m ingest --source gs://BUCKET/pdfs --db gs://BUCKET/lancedb

ARG PYTHON_IMAGE=python:3.11-slim
ARG TORCH_VERSION=2.13.0

# --- builder: export the embedding model to ONNX (needs torch, CPU build) ---------------------
FROM ${PYTHON_IMAGE} AS builder
ARG TORCH_VERSION
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
# The CPU wheel first, so the project's dependencies do not pull CUDA builds (gigabytes).
RUN pip install "torch==${TORCH_VERSION}" --index-url https://download.pytorch.org/whl/cpu
WORKDIR /src
COPY pyproject.toml README.md ./
COPY thoth thoth
COPY ingest ingest
RUN pip install .
# fp32 (THOTH_EMBED_PROVIDER=local, the default) and int8 (local-int8) under /opt/thoth/cache/onnx/
RUN THOTH_CACHE_DIR=/opt/thoth/cache python -m thoth.embedders.onnx_export --int8

# --- runtime: torch-free ----------------------------------------------------------------------
FROM ${PYTHON_IMAGE} AS runtime
ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PATH=/opt/venv/bin:$PATH \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    LANCEDB_LOG=error \
    THOTH_PDF_OCR=true \
    THOTH_CACHE_DIR=/opt/thoth/cache \
    THOTH_HOST=0.0.0.0 \
    PORT=8080
WORKDIR /src
# git: the ingest job reads git sources with the git command line (thoth/writes/git_source.py).
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends git ca-certificates \
    && rm -rf /var/lib/apt/lists/*
# Third-party dependencies first: this layer is reused while only Thoth's code changes.
COPY pyproject.toml README.md ./
COPY scripts/image_deps.py scripts/install_runtime.sh scripts/
RUN sh scripts/install_runtime.sh deps /opt/venv /src
COPY thoth thoth
COPY ingest ingest
RUN sh scripts/install_runtime.sh app /opt/venv /src && rm -rf /src
# model.onnx is the graph; its weights are the model.onnx.*.weights file beside it, which onnxruntime maps at
# start instead of parsing them (a cheaper cold start): the folder is copied whole.
COPY --from=builder /opt/thoth/cache/onnx /opt/thoth/cache/onnx
# Non-root; the image's files stay read-only to it (the index lives in GCS, the model is read-only).
RUN useradd --uid 10001 --no-create-home --shell /usr/sbin/nologin thoth
USER 10001
WORKDIR /tmp
EXPOSE 8080
CMD ["python", "-m", "thoth.mcp.server"]
