#!/usr/bin/env bash
# Smoke-test a Thoth server: the curl sequence of the handbook MCP seed (health, initialize,
# tools/list, tools/call search_handbook), each answer checked; exits non-zero on the first wrong one.
#
#   scripts/smoke.sh https://thoth-xxxxx.a.run.app
#
# Credentials:
# - `gcloud auth print-identity-token`, when gcloud is installed and logged in (Cloud Run's IAM check);
# - THOTH_TOKEN from the environment otherwise (a static token for THOTH_AUTH=tokens, or an ID token);
# - both at once: the gcloud token goes in X-Serverless-Authorization (checked by Cloud Run) and
#   THOTH_TOKEN in Authorization (checked by the app).
# SMOKE_GCLOUD=0 skips gcloud. SMOKE_QUERY and SMOKE_EXPECT (a source path the first hits must
# include) adapt the search check to your corpus.
set -euo pipefail

URL="${1:-}"
if [[ -z "$URL" ]]; then
    echo "usage: $0 URL   (e.g. https://thoth-xxxxx.a.run.app)" >&2
    exit 2
fi
URL="${URL%/}"
QUERY="${SMOKE_QUERY:-how to request time off}"
EXPECT="${SMOKE_EXPECT:-}"
PY="$(command -v python3 || command -v python)"

fail() {
    echo "SMOKE FAILED: $*" >&2
    exit 1
}

id_token=""
if [[ "${SMOKE_GCLOUD:-auto}" != "0" ]] && command -v gcloud >/dev/null 2>&1; then
    id_token="$(gcloud auth print-identity-token 2>/dev/null || true)"
fi
auth=()
if [[ -n "$id_token" && -n "${THOTH_TOKEN:-}" ]]; then
    auth=(-H "X-Serverless-Authorization: Bearer $id_token" -H "Authorization: Bearer $THOTH_TOKEN")
    echo "credentials: gcloud identity token (X-Serverless-Authorization) + THOTH_TOKEN"
elif [[ -n "$id_token" ]]; then
    auth=(-H "Authorization: Bearer $id_token")
    echo "credentials: gcloud identity token"
elif [[ -n "${THOTH_TOKEN:-}" ]]; then
    auth=(-H "Authorization: Bearer $THOTH_TOKEN")
    echo "credentials: THOTH_TOKEN"
else
    echo "credentials: none (no gcloud login, no THOTH_TOKEN)"
fi

body="$(mktemp)"
trap 'rm -f "$body"' EXIT

# call NAME EXPECTED_STATUS curl-args... : the body lands in $body; a wrong status fails the run.
call() {
    local name="$1" want="$2"
    shift 2
    local status
    status="$(curl -sS -o "$body" -w '%{http_code}' --max-time 120 "$@")" || fail "$name: request failed (curl exit $?)"
    if [[ "$status" != "$want" ]]; then
        fail "$name: HTTP $status, expected $want: $(head -c 400 "$body")"
    fi
}

# check NAME PYTHON_EXPR : the expression gets `d` (the JSON body) and `expect` ($SMOKE_EXPECT); it must be true.
check() {
    local name="$1" expr="$2"
    SMOKE_EXPECT="$EXPECT" "$PY" - "$body" "$expr" <<'EOF' || fail "$name: unexpected answer: $(head -c 600 "$body")"
import json, os, sys
text = open(sys.argv[1]).read()
if text.lstrip().startswith(("event:", "data:")):  # an SSE answer: the JSON is its data line
    text = next(line[5:] for line in text.splitlines() if line.startswith("data:"))
d = json.loads(text)
sys.exit(0 if eval(sys.argv[2], {"d": d, "expect": os.environ.get("SMOKE_EXPECT", "")}) else 1)
EOF
    echo "ok   $name"
}

# 1. health (open to probes; sent with the credentials as the seed does)
call health 200 "${auth[@]}" "$URL/health"
check health 'd["status"] == "ok" and d["tables"].get("chunks", 0) > 0'

# 2. initialize
call initialize 200 -X POST "${auth[@]}" \
    -H "Content-Type: application/json" \
    -H "Accept: application/json, text/event-stream" \
    -d '{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"curl","version":"1.0"}},"id":1}' \
    "$URL/mcp"
check initialize 'd["id"] == 1 and d["result"]["serverInfo"]["name"] == "thoth" and "tools" in d["result"]["capabilities"]'

# 3. tools/list (no Accept header, exactly as the seed sends it)
call tools/list 200 -X POST "${auth[@]}" \
    -H "Content-Type: application/json" \
    -d '{"jsonrpc":"2.0","method":"tools/list","id":2}' \
    "$URL/mcp"
check tools/list '{"search_handbook", "list_topics", "list_tools"} <= {t["name"] for t in d["result"]["tools"]}'

# 4. tools/call search_handbook
payload="$("$PY" -c 'import json, sys; print(json.dumps({"jsonrpc": "2.0", "method": "tools/call", "id": 3,
    "params": {"name": "search_handbook", "arguments": {"query": sys.argv[1], "num_results": 3}}}))' "$QUERY")"
call search_handbook 200 -X POST "${auth[@]}" \
    -H "Content-Type: application/json" \
    -d "$payload" \
    "$URL/mcp"
check search_handbook 'd["id"] == 3 and not d["result"]["isError"] and 1 <= len(d["result"]["structuredContent"]["results"]) <= 3 and all(h["content"] and h["source"] for h in d["result"]["structuredContent"]["results"])'
if [[ -n "$EXPECT" ]]; then
    check "search_handbook finds $EXPECT" 'expect in [h["source"] for h in d["result"]["structuredContent"]["results"]]'
fi

# 5. without credentials the MCP endpoint must refuse (when we had some to leave out)
if [[ ${#auth[@]} -gt 0 ]]; then
    status="$(curl -sS -o /dev/null -w '%{http_code}' --max-time 60 -X POST -H "Content-Type: application/json" \
        -d '{"jsonrpc":"2.0","method":"tools/list","id":4}' "$URL/mcp")" || fail "unauthenticated: request failed"
    [[ "$status" == "401" || "$status" == "403" ]] || fail "unauthenticated: HTTP $status, expected 401 or 403: the service is open to anyone"
    echo "ok   unauthenticated request refused ($status)"
fi

echo "smoke test passed: $URL"
