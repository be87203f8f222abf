"""What checking a caller costs per request with THOTH_AUTH=oauth, against a static token, in one process.

    python -m bench.oauth [--calls 2000]

Times `Authenticator.public` (what the auth middleware runs before every /mcp request) on one request:
- `tokens`: THOTH_AUTH=tokens with a static token (the reference: constant-time compares only);
- `oauth`: an access token Thoth issued (ES256 signature, claims, membership, the family's revocation as
  read within the last 5 s: the common case);
- `oauth, family read`: the same with the family's row read from the index every time (an instance's first
  request for that family, or one more than 5 s after the last), on a local folder;
and prints microseconds per call (median of 5 rounds) and each as a ratio of the reference.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from starlette.requests import Request

from thoth.config import Settings
from thoth.mcp.auth import Authenticator
from thoth.mcp.oauth import ACCESS_SECONDS, SCOPES, ThothProvider
from thoth.store.db import Store

STATIC = "static-token-for-the-bench-0123456789"


def request(token: str) -> Request:
    headers = [(b"authorization", f"Bearer {token}".encode()), (b"host", b"127.0.0.1:8080")]
    return Request({"type": "http", "method": "POST", "path": "/mcp", "headers": headers, "query_string": b""})


async def per_call(auth: Authenticator, token: str, calls: int, before=None) -> float:
    req = request(token)
    start = time.perf_counter()
    for _ in range(calls):
        if before is not None:
            before()
        await auth.public(req)
    return (time.perf_counter() - start) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-oauth-"))
    key = folder / "key.pem"
    private = ec.generate_private_key(ec.SECP256R1())
    key.write_bytes(
        private.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    public_url = "https://thoth.example.com"
    base = {"db_uri": str(folder / "lancedb"), "public_url": public_url, "auth_members": ("domain:example.com",)}
    tokens = Authenticator(Settings.from_env({}, **base, auth_mode="tokens", auth_tokens=(STATIC,)))
    settings = Settings.from_env(
        {},
        **base,
        auth_mode="oauth",
        oauth_client_id="bench",
        oauth_client_secret="bench",
        oauth_key_file=str(key),
    )
    provider = ThothProvider(settings, Store(settings).oauth_state)
    provider.state.start("family:bench", time.time() + 3600)
    now = int(time.time())
    access = provider.keys.sign(
        {
            "iss": public_url,
            "aud": f"{public_url}/mcp",
            "sub": "1",
            "client_id": "bench",
            "scope": " ".join(SCOPES),
            "email": "alice@example.com",
            "groups": ["eng"],
            "fam": "bench",
            "iat": now,
            "exp": now + ACCESS_SECONDS,
        }
    )
    oauth = Authenticator(settings, provider)

    async def rounds() -> dict[str, list[float]]:
        found: dict[str, list[float]] = {"tokens": [], "oauth": [], "oauth, family read": []}
        await oauth.public(request(access))  # warm: the first read opens the table
        for _ in range(5):
            found["tokens"].append(await per_call(tokens, STATIC, args.calls))
            found["oauth"].append(await per_call(oauth, access, args.calls))
            found["oauth, family read"].append(
                await per_call(oauth, access, max(args.calls // 10, 50), before=provider._live.clear)
            )
        return found

    found = asyncio.run(rounds())
    reference = statistics.median(found["tokens"])
    print(f"{'caller check':<22}{'µs/call':>10}{'× tokens':>10}")
    for name, values in found.items():
        median = statistics.median(values)
        print(f"{name:<22}{median:>10.1f}{median / reference:>10.1f}")


if __name__ == "__main__":
    main()
