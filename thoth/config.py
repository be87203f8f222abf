"""Every setting Thoth reads, from the environment, in one place.

Only this module reads environment variables. Everything else receives a
`Settings` object (usually through `Settings.from_env()` once per process).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

DEFAULT_DB_URI = "./.thoth/lancedb"
DEFAULT_MODEL = "all-MiniLM-L6-v2"
ALL_TOOLSETS = ("handbook",)


class ConfigError(ValueError):
    """A setting has a value Thoth cannot use; the message names the variable."""


def _int(env: Mapping[str, str], name: str, default: int, lo: int, hi: int) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be an integer between {lo} and {hi}, got {raw!r}") from None
    if not lo <= value <= hi:
        raise ConfigError(f"{name} must be between {lo} and {hi}, got {value}")
    return value


def _float(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        return float(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a number, got {raw!r}") from None


def _list(env: Mapping[str, str], name: str) -> list[str]:
    return [item.strip() for item in env.get(name, "").split(",") if item.strip()]


def _db_uri(env: Mapping[str, str]) -> str:
    if env.get("THOTH_DB_URI"):
        return env["THOTH_DB_URI"]
    if env.get("GCS_BUCKET_NAME"):  # the seed systems' convention
        return f"gs://{env['GCS_BUCKET_NAME']}/lancedb"
    return DEFAULT_DB_URI


def _toolsets(env: Mapping[str, str]) -> tuple[str, ...]:
    names = _list(env, "THOTH_TOOLSETS") or list(ALL_TOOLSETS)
    unknown = [n for n in names if n not in ALL_TOOLSETS]
    if unknown:
        raise ConfigError(
            f"THOTH_TOOLSETS has unknown toolset(s) {', '.join(unknown)}; allowed: {', '.join(ALL_TOOLSETS)}"
        )
    return tuple(dict.fromkeys(names))


@dataclass(frozen=True)
class Settings:
    # Storage
    db_uri: str = DEFAULT_DB_URI
    read_consistency_seconds: float = 5.0
    # Embedding
    embed_model: str = DEFAULT_MODEL
    embed_backend: str = "torch"  # "torch" (sentence-transformers) or "onnx" (onnxruntime, no torch)
    embed_batch_size: int = 64
    embed_int8: bool = False  # onnx only: dynamically quantised int8 weights
    cache_dir: str = "./.thoth"  # exported models and other derived files
    # Chunking: the model reads 256 word pieces (254 plus [CLS]/[SEP]); chunks stay well inside.
    chunk_tokens: int = 200
    chunk_overlap_tokens: int = 32
    # Serving
    host: str = "127.0.0.1"
    port: int = 8080
    toolsets: tuple[str, ...] = ALL_TOOLSETS
    allowed_hosts: tuple[str, ...] = ()
    admin_token: str = ""
    public_url: str = ""
    # Logging
    log_level: str = "INFO"
    log_json: bool = False
    # Free-form extras for storage (e.g. GCS emulator options); filled by `storage_options()`.
    env: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: object) -> Settings:
        env = dict(os.environ if environ is None else environ)
        backend = env.get("THOTH_EMBED_BACKEND", "torch").strip().lower()
        if backend not in ("torch", "onnx"):
            raise ConfigError(f"THOTH_EMBED_BACKEND must be 'torch' or 'onnx', got {backend!r}")
        level = env.get("THOTH_LOG_LEVEL", env.get("LOG_LEVEL", "INFO")).upper()
        if level not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
            raise ConfigError(f"THOTH_LOG_LEVEL must be DEBUG, INFO, WARNING, ERROR or CRITICAL, got {level!r}")
        chunk_tokens = _int(env, "THOTH_CHUNK_TOKENS", 200, 32, 254)
        settings = cls(
            db_uri=_db_uri(env),
            read_consistency_seconds=_float(env, "THOTH_READ_CONSISTENCY_SECONDS", 5.0),
            embed_model=env.get("THOTH_EMBED_MODEL", DEFAULT_MODEL),
            embed_backend=backend,
            embed_batch_size=_int(env, "THOTH_EMBED_BATCH_SIZE", 64, 1, 4096),
            embed_int8=env.get("THOTH_EMBED_INT8", "").lower() in ("1", "true", "yes"),
            cache_dir=env.get("THOTH_CACHE_DIR", "./.thoth"),
            chunk_tokens=chunk_tokens,
            chunk_overlap_tokens=_int(env, "THOTH_CHUNK_OVERLAP_TOKENS", 32, 0, chunk_tokens // 2),
            host=env.get("THOTH_HOST", env.get("HOST", "127.0.0.1")),
            port=_int(env, "PORT", 8080, 0, 65535),
            toolsets=_toolsets(env),
            allowed_hosts=tuple(_list(env, "THOTH_ALLOWED_HOSTS")),
            admin_token=env.get("THOTH_ADMIN_TOKEN", ""),
            public_url=env.get("THOTH_PUBLIC_URL", ""),
            log_level=level,
            log_json=bool(env.get("K_SERVICE")) or env.get("THOTH_LOG_FORMAT", "").lower() == "json",
            env=env,
        )
        return replace(settings, **overrides) if overrides else settings

    @property
    def is_local_db(self) -> bool:
        return "://" not in self.db_uri

    def local_db_path(self) -> Path:
        return Path(self.db_uri).expanduser().resolve()
