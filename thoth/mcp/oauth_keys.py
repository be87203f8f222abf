"""The one key behind everything THOTH_AUTH=oauth issues (THOTH_OAUTH_KEY_FILE): a PEM private key signs the
access tokens, and HKDF derives from it the key that seals every other blob (JWE dir + A256GCM) and the key
of each registered client's secret, so every instance mounting the same secret holds them all."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from joserfc import jwe, jwt
from joserfc.errors import JoseError
from joserfc.jwk import ECKey, OctKey, RSAKey

from thoth.config import ConfigError

SEAL_HEADER = {"alg": "dir", "enc": "A256GCM"}


def _derive(secret: bytes, label: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"thoth oauth " + label).derive(secret)


class Keys:
    def __init__(self, pem: bytes, source: str = "THOTH_OAUTH_KEY_FILE"):
        try:
            private = serialization.load_pem_private_key(pem, password=None)
        except (ValueError, TypeError):
            raise ConfigError(f"{source} is not an unencrypted PEM private key (EC P-256 or RSA)") from None
        if isinstance(private, ec.EllipticCurvePrivateKey) and isinstance(private.curve, ec.SECP256R1):
            self.algorithm, key_type = "ES256", ECKey
        elif isinstance(private, rsa.RSAPrivateKey) and private.key_size >= 2048:
            self.algorithm, key_type = "RS256", RSAKey
        else:
            raise ConfigError(f"{source} must hold an EC P-256 key or an RSA key of at least 2048 bits")
        der = private.private_bytes(
            serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        self._signing = key_type.import_key(der)
        self.key_id = self._signing.thumbprint()
        self._sealing = OctKey.import_key(_derive(der, b"sealing"))
        self._client_mac = _derive(der, b"client secrets")

    @classmethod
    def from_file(cls, path: str) -> Keys:
        try:
            return cls(Path(path).read_bytes())
        except OSError as exc:
            raise ConfigError(f"THOTH_OAUTH_KEY_FILE {path!r} cannot be read: {exc.strerror}") from None

    # -- sealed blobs -----------------------------------------------------------------------

    def seal(self, kind: str, claims: dict[str, Any], lifetime: float | None) -> str:
        body = {**claims, "kind": kind}
        if lifetime is not None:
            body["exp"] = int(time.time() + lifetime)
        return jwe.encrypt_compact(SEAL_HEADER, json.dumps(body, separators=(",", ":")).encode(), self._sealing)

    def open(self, kind: str, blob: str) -> dict[str, Any] | None:
        """The claims of a blob this key sealed as `kind` and not expired; None for anything else."""
        if not blob or blob.count(".") != 4:
            return None
        try:
            body = json.loads(jwe.decrypt_compact(blob, self._sealing).plaintext or b"")
        except (JoseError, ValueError, TypeError):
            return None
        if not isinstance(body, dict) or body.get("kind") != kind:
            return None
        exp = body.get("exp")
        if exp is not None and (not isinstance(exp, int | float) or exp < time.time()):
            return None
        return body

    def client_secret(self, client_id: str) -> str:
        return hmac.new(self._client_mac, client_id.encode(), hashlib.sha256).hexdigest()

    # -- access tokens ----------------------------------------------------------------------

    def sign(self, claims: dict[str, Any]) -> str:
        header = {"alg": self.algorithm, "kid": self.key_id, "typ": "at+jwt"}  # RFC 9068's type
        return jwt.encode(header, claims, self._signing)

    def verify(self, token: str) -> dict[str, Any] | None:
        """The claims of an access token this key signed (signature and type only; the caller checks the rest)."""
        if token.count(".") != 2:
            return None
        try:
            decoded = jwt.decode(token, self._signing, algorithms=[self.algorithm])
        except (JoseError, ValueError, TypeError):
            return None
        if decoded.header.get("typ") != "at+jwt" or decoded.header.get("kid") != self.key_id:
            return None
        return dict(decoded.claims)
