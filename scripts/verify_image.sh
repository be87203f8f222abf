#!/usr/bin/env bash
# Check the Dockerfile without a Docker daemon: run its RUN steps into a fresh venv under a temp
# folder, then use that venv as the image would: `python -m ingest` (the job) builds an index of
# examples/handbook, `python -m thoth.mcp.server` (the service) serves it, scripts/smoke.sh checks
# it. Prints the venv's size (the image's estimate) and the server's RSS.
#
#   scripts/verify_image.sh [WORKDIR]
#
# The builder stage's ONNX export runs with the python given as EXPORT_PYTHON (default: the one
# running pytest here, which has the CPU torch), as the builder stage runs it with its own torch.
set -euo pipefail
SRC="$(cd "$(dirname "$0")/.." && pwd)"
WORK="${1:-$(mktemp -d /tmp/thoth-image.XXXXXX)}"
EXPORT_PYTHON="${EXPORT_PYTHON:-python}"
PYTHON_FOR_VENV="${PYTHON_FOR_VENV:-python3.11}"
mkdir -p "$WORK"
VENV="$WORK/venv"
echo "work dir: $WORK"

# A fresh interpreter environment, like the base image's python (no packages but pip).
[[ -x "$VENV/bin/python" ]] || "$PYTHON_FOR_VENV" -m venv "$VENV"
export PATH="$VENV/bin:$PATH"  # the scripts' `python3` is the venv's, as in the image

t0=$(date +%s)
sh "$SRC/scripts/install_runtime.sh" deps "$VENV" "$SRC"
sh "$SRC/scripts/install_runtime.sh" app "$VENV" "$SRC"
echo "runtime venv built in $(( $(date +%s) - t0 )) s"

# builder stage: export fp32 + int8 ONNX into the cache the image copies
if [[ ! -f "$WORK/cache/onnx/sentence-transformers--all-MiniLM-L6-v2/model.onnx" ]]; then
    (cd "$SRC" && THOTH_CACHE_DIR="$WORK/cache" "$EXPORT_PYTHON" -m thoth.embed export --int8)
fi

# The image's environment, run from outside the source tree so only installed code is used.
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 LANCEDB_LOG=error THOTH_CACHE_DIR="$WORK/cache"
cd "$WORK"
if "$VENV/bin/python" -c "import torch" 2>/dev/null; then
    echo "FAILED: torch is importable in the runtime venv" >&2
    exit 1
fi
"$VENV/bin/python" -c "import thoth, ingest, sys; assert '$SRC' not in thoth.__file__, thoth.__file__; print('thoth from', thoth.__file__)"

rm -rf "$WORK/db" "$WORK/corpus"
cp -r "$SRC/examples/handbook" "$WORK/corpus"
"$VENV/bin/python" -m ingest --source "$WORK/corpus" --db "$WORK/db" --name handbook

PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
TOKEN="verify-image-token-$(date +%s%N)"
THOTH_DB_URI="$WORK/db" THOTH_HOST=127.0.0.1 PORT="$PORT" K_SERVICE=verify-image THOTH_AUTH=tokens \
    THOTH_AUTH_TOKENS="$TOKEN" "$VENV/bin/python" -m thoth.mcp.server 2>"$WORK/server.log" &
SERVER=$!
trap 'kill "$SERVER" 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do
    curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && break
    sleep 0.1
done
THOTH_TOKEN="$TOKEN" SMOKE_GCLOUD=0 SMOKE_QUERY="how do I request time off" bash "$SRC/scripts/smoke.sh" "http://127.0.0.1:$PORT"
for i in $(seq 1 20); do  # some load, so RSS is measured warm
    curl -sf -X POST -H "Authorization: Bearer $TOKEN" -H "Content-Type: application/json" \
        -d "{\"jsonrpc\":\"2.0\",\"id\":$i,\"method\":\"tools/call\",\"params\":{\"name\":\"search_handbook\",\"arguments\":{\"query\":\"deploy the ingest job $i\",\"num_results\":20}}}" \
        "http://127.0.0.1:$PORT/mcp" >/dev/null
done
rss=$(awk '/VmRSS/ {print $2}' "/proc/$SERVER/status")
hwm=$(awk '/VmHWM/ {print $2}' "/proc/$SERVER/status")
kill -TERM "$SERVER"
wait "$SERVER" || true
trap - EXIT
python3 - "$WORK/server.log" <<'PY'
import json, sys
lines = [line for line in open(sys.argv[1]) if line.strip()]
bad = [line for line in lines if not line.startswith("{")]
for line in lines:
    json.loads(line) if line.startswith("{") else None
print(f"server log: {len(lines)} lines, {len(bad)} not JSON")
sys.exit(1 if bad else 0)
PY
echo "server RSS after 20 searches: $((rss / 1024)) MiB (peak $((hwm / 1024)) MiB)"
echo "runtime venv: $(du -sm "$VENV" | cut -f1) MiB; ONNX models: $(du -sm "$WORK/cache/onnx" | cut -f1) MiB"
echo "largest packages:"
du -sm "$VENV"/lib/python3*/site-packages/* | sort -rn | head -8
echo "image check passed"
