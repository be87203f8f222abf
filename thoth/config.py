"""Every setting Thoth reads, from the environment, in one place.

Only this module reads environment variables. Everything else receives a
`Settings` object (usually through `Settings.from_env()` once per process).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from thoth.errors import ThothError, check_choice

DEFAULT_DB_URI = "./.thoth/lancedb"
DEFAULT_MODEL = "all-MiniLM-L6-v2"
# Where vectors come from (docs/models.md): the bundled or a local model in this process, or an endpoint
EMBED_PROVIDERS = ("local", "sentence-transformers", "openai", "vertex")
REMOTE_EMBED_PROVIDERS = ("openai", "vertex")
# The optional reranker (thoth/retrieval/rerank.py): none, a /rerank endpoint in Cohere's shape (Cohere, Jina,
# vLLM) or text-embeddings-inference's, the Vertex AI ranking API, or a local sentence-transformers cross-encoder
RERANK_PROVIDERS = ("none", "cohere", "tei", "vertex", "cross-encoder")
ALL_TOOLSETS = ("handbook", "qurio", "workshop", "research", "raptor")
AUTH_MODES = ("off", "google", "tokens")
GOOGLE_CERTS_URL = "https://www.googleapis.com/oauth2/v1/certs"
_PROJECT_VARS = ("THOTH_GCP_PROJECT", "GOOGLE_CLOUD_PROJECT", "GCP_PROJECT_ID")  # the last: the seed's name
CITATION_MODES = ("signed", "gs", "portal", "file")
# The GCS emulator (fake-gcs-server) takes Lance writes only through the OpenDAL backend, in one upload.
EMULATOR_UPLOAD_SIZE = "1073741824"


class ConfigError(ThothError, ValueError):
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


def _base_urls(env: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """THOTH_SOURCE_BASE_URLS=source_id=https://base,other=https://...: public page URLs per source."""
    pairs = []
    for item in _list(env, "THOTH_SOURCE_BASE_URLS"):
        source_id, sep, url = item.partition("=")
        source_id, url = source_id.strip(), url.strip()
        if not sep or not source_id or not url.startswith(("http://", "https://")):
            raise ConfigError(
                f"THOTH_SOURCE_BASE_URLS entries must look like source_id=https://host/path, got {item!r}"
            )
        pairs.append((source_id, url))
    return tuple(pairs)


def _citation_mode(env: Mapping[str, str]) -> str:
    mode = env.get("THOTH_CITATION_MODE", "").strip().lower()
    if mode:
        check_choice("THOTH_CITATION_MODE", mode, CITATION_MODES, ConfigError)
    return mode


def _choice(env: Mapping[str, str], name: str, default: str, allowed: tuple[str, ...]) -> str:
    value = env.get(name, "").strip().lower() or default
    if value not in allowed:
        raise ConfigError(f"{name} must be one of {', '.join(repr(a) for a in allowed)}, got {value!r}")
    return value


def _check_reranker(settings: Settings) -> None:
    """A reranker that cannot run is said at start, not skipped at every search."""
    provider = settings.rerank_provider
    if provider in ("cohere", "tei") and not settings.rerank_url:
        raise ConfigError(f"THOTH_RERANK_PROVIDER={provider} needs THOTH_RERANK_URL, e.g. http://127.0.0.1:8080/rerank")
    if provider == "vertex" and not settings.gcp_project:
        raise ConfigError("THOTH_RERANK_PROVIDER=vertex needs THOTH_GCP_PROJECT, the project the ranking API bills")
    if provider == "cross-encoder" and not settings.rerank_model:
        raise ConfigError("THOTH_RERANK_PROVIDER=cross-encoder needs THOTH_RERANK_MODEL, the model's folder")


def _llm(env: Mapping[str, str]) -> dict[str, object]:
    """The optional LLM (answers, and tree summaries when THOTH_TREE_SUMMARISER=llm)."""
    provider = _choice(env, "THOTH_LLM_PROVIDER", "none", ("none", "openai", "gemini"))
    model = env.get("THOTH_LLM_MODEL", "").strip()
    url = env.get("THOTH_LLM_URL", "").strip()
    if provider == "openai" and not (url and model):
        raise ConfigError("THOTH_LLM_PROVIDER=openai needs THOTH_LLM_URL (the /v1 base URL) and THOTH_LLM_MODEL")
    if provider == "gemini" and not model:
        model = "gemini-2.0-flash"
    summariser = _choice(env, "THOTH_TREE_SUMMARISER", Settings.tree_summariser, ("extractive", "llm"))
    if summariser == "llm" and provider == "none":
        raise ConfigError("THOTH_TREE_SUMMARISER=llm needs an LLM: set THOTH_LLM_PROVIDER to 'openai' or 'gemini'")
    return {
        "llm_provider": "" if provider == "none" else provider,
        "llm_model": model,
        "llm_url": url,
        "llm_api_key": env.get("THOTH_LLM_API_KEY", ""),
        "llm_rpm": _int(env, "THOTH_LLM_RPM", Settings.llm_rpm, 1, 100_000),
        "gcp_location": env.get("GOOGLE_CLOUD_LOCATION", Settings.gcp_location),
        "tree_summariser": summariser,
    }


def _toolsets(env: Mapping[str, str]) -> tuple[str, ...]:
    names = _list(env, "THOTH_TOOLSETS") or list(ALL_TOOLSETS)
    unknown = [n for n in names if n not in ALL_TOOLSETS]
    if unknown:
        raise ConfigError(
            f"THOTH_TOOLSETS has unknown toolset(s) {', '.join(unknown)}; allowed: {', '.join(ALL_TOOLSETS)}"
        )
    return tuple(dict.fromkeys(names))


def _auth_tokens(env: Mapping[str, str], name: str = "THOTH_AUTH_TOKENS") -> tuple[str, ...]:
    """Static bearer tokens: `name` (comma-separated) and/or `name`_FILE (one a line).

    The file form is how a Secret Manager secret is mounted on Cloud Run; `#` lines are comments.
    """
    tokens = _list(env, name)
    path = env.get(f"{name}_FILE", "")
    if path:
        try:
            lines = Path(path).read_text().splitlines()
        except OSError as exc:
            raise ConfigError(f"{name}_FILE {path!r} cannot be read: {exc.strerror}") from None
        tokens += [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]
    if any(len(t) < 16 for t in tokens):  # never echo a token, not even a bad one
        raise ConfigError(f"{name}: every token must be at least 16 characters")
    return tuple(dict.fromkeys(tokens))


def _members(env: Mapping[str, str], name: str) -> tuple[str, ...]:
    """IAM-style members a token's identity can be checked against: emails or `domain:example.com`.

    `user:` and `serviceAccount:` prefixes are accepted (and dropped) so the same list can be given to
    terraform's invoker bindings; `group:` cannot be checked from a token and is refused.
    """
    members = []
    for item in _list(env, name):
        kind, sep, value = item.partition(":")
        if not sep:
            kind, value = "user", item
        kind = kind.lower()
        if kind in ("user", "serviceaccount") and "@" in value:
            members.append(value.lower())
        elif kind == "domain" and value and "@" not in value:
            members.append(f"domain:{value.lower()}")
        else:
            raise ConfigError(
                f"{name}: {item!r} is not an email, user:EMAIL, serviceAccount:EMAIL or domain:NAME "
                "(groups cannot be checked from a token)"
            )
    return tuple(dict.fromkeys(members))


def _bool(env: Mapping[str, str], name: str) -> bool:
    raw = env.get(name, "").strip().lower()
    if raw in ("", "0", "false", "no", "off"):
        return False
    if raw in ("1", "true", "yes", "on"):
        return True
    raise ConfigError(f"{name} must be true or false, got {raw!r}")


def _auth(env: Mapping[str, str]) -> dict[str, object]:
    mode = env.get("THOTH_AUTH", "").strip().lower() or Settings.auth_mode
    check_choice("THOTH_AUTH", mode, AUTH_MODES, ConfigError)
    public_url = env.get("THOTH_PUBLIC_URL", "").rstrip("/")
    audiences = tuple(_list(env, "THOTH_AUTH_AUDIENCES")) or ((public_url,) if public_url else ())
    trust_edge = _bool(env, "THOTH_TRUST_CLOUD_RUN_IAM")
    tokens = _auth_tokens(env)
    writer_tokens = _auth_tokens(env, "THOTH_AUTH_WRITER_TOKENS")
    if set(tokens) & set(writer_tokens):  # one token, two roles: which one was meant is unclear
        raise ConfigError("a token is in both THOTH_AUTH_TOKENS and THOTH_AUTH_WRITER_TOKENS; list it once")
    if mode == "tokens" and not (tokens or writer_tokens):
        raise ConfigError("THOTH_AUTH=tokens needs THOTH_AUTH_TOKENS or THOTH_AUTH_TOKENS_FILE")
    if mode == "google" and not audiences and not trust_edge:
        raise ConfigError("THOTH_AUTH=google needs THOTH_AUTH_AUDIENCES or THOTH_PUBLIC_URL (the expected audience)")
    return {
        "auth_mode": mode,
        "auth_audiences": audiences,
        "auth_members": _members(env, "THOTH_AUTH_MEMBERS"),
        "auth_tokens": tokens,
        "auth_writer_tokens": writer_tokens,
        "auth_writers": _members(env, "THOTH_AUTH_WRITERS"),
        "auth_trust_edge": trust_edge,
        "auth_certs_url": env.get("THOTH_AUTH_CERTS_URL", Settings.auth_certs_url),
        "internal_identities": _members(env, "THOTH_INTERNAL_IDENTITIES"),
    }


@dataclass(frozen=True)
class Settings:
    # Storage
    db_uri: str = DEFAULT_DB_URI
    read_consistency_seconds: float = 5.0
    lance_cache_mb: int = 0  # LanceDB's caches together; 0: a quarter of the instance's memory, 64-1024 MB
    maintain_retention_minutes: int = 60  # versions older than this are cleaned; longer than any reader holds one
    maintain_after_writes: int = 50  # the server maintains the index after this many writes; 0: never
    write_wait_seconds: float = 30.0  # a write tool call waits this long for another write to end, then: busy
    # Embedding
    embed_provider: str = "local"  # one of EMBED_PROVIDERS; "local" runs `embed_backend`
    embed_model: str = DEFAULT_MODEL
    embed_backend: str = "onnx"  # "onnx" (onnxruntime, no torch) or "torch" (sentence-transformers, GPUs)
    embed_batch_size: int = 0  # texts per embedding batch; 0: the provider's (thoth.embed.embed_batch)
    embed_int8: bool = False  # onnx only: dynamically quantised int8 weights
    # Put before every query and every document embedded (e5: "query: " / "passage: "); kept verbatim,
    # spaces included, and recorded with the index
    embed_query_prompt: str = ""
    embed_document_prompt: str = ""
    # Remote providers (thoth/embedders/): the endpoint, its key, and how hard to press it
    embed_url: str = ""
    embed_api_key: str = field(default="", repr=False)
    embed_api_key_file: str = ""  # a file holding the key (a mounted secret), read when the key is unset
    embed_dimensions: int = 0  # asked of the endpoint and checked on every answer; 0: the model's own
    embed_concurrency: int = 4  # batches in flight at once
    embed_retries: int = 4  # retries of a 429, a 5xx or a timeout, with doubling waits
    embed_timeout_seconds: float = 30.0
    # Vertex AI task types (vertex only): how queries and documents are embedded; recorded with the index
    embed_query_task: str = "RETRIEVAL_QUERY"
    embed_document_task: str = "RETRIEVAL_DOCUMENT"
    # The reranker: off by default; it reorders the first `rerank_top_n` hybrid hits within the time budget
    rerank_provider: str = "none"
    rerank_model: str = ""  # the endpoint's model name, or the cross-encoder's folder
    rerank_url: str = ""  # the endpoint's full URL, e.g. http://127.0.0.1:8080/rerank
    rerank_api_key: str = field(default="", repr=False)
    rerank_top_n: int = 20
    rerank_timeout_seconds: float = 2.0  # past it, the fused ranking stands
    cache_dir: str = "./.thoth"  # exported models and other derived files
    query_cache_size: int = 1024  # the server's LRU of query embeddings (one vector each); 0: none
    search_threads: int = 0  # threads running blocking tool calls (search, ONNX); 0: two per core
    # Chunking: the model reads 256 word pieces (254 plus [CLS]/[SEP]); chunks stay well inside.
    # Their overlap is thoth.writes.chunking.OVERLAP_TOKENS.
    chunk_tokens: int = 200
    # RAPTOR trees (built by the ingest job per source)
    tree_build: bool = True
    tree_reducer: str = "pca"  # "pca" or "umap" (needs the `umap` extra); see docs/raptor.md
    tree_cluster_tokens: int = 3500  # the summariser's input limit: larger clusters are split again
    tree_summary_tokens: int = 200  # summary length budget, in the embedder's word pieces
    tree_drift_max: float = 0.25  # share of a tree changed in place before a run rebuilds it (docs/raptor.md)
    tree_summariser: str = "extractive"  # "extractive" (offline, deterministic) or "llm"
    # The optional LLM: generated answers, and tree summaries when tree_summariser == "llm"
    llm_provider: str = ""  # "", "openai" (any OpenAI-compatible endpoint) or "gemini" (Vertex AI)
    llm_model: str = ""
    llm_url: str = ""  # OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1
    llm_api_key: str = field(default="", repr=False)
    llm_rpm: int = 60  # requests per minute, per process
    gcp_location: str = "us-central1"  # Vertex AI region (the project is gcp_project, below)
    # ANN index on chunk vectors: built by ingest once the table has this many rows (0: never). Below
    # it an exact search is fast enough and holds little; past it every concurrent query would read
    # every vector (docs/performance.md, "ANN index").
    vector_index_min_rows: int = 20_000
    # Serving
    host: str = "127.0.0.1"
    port: int = 8080
    # Server processes sharing the port, each with its own model and tables: a second one doubles the
    # memory for little more throughput on a small machine (docs/performance.md, "Workers").
    workers: int = 1
    toolsets: tuple[str, ...] = ALL_TOOLSETS
    allowed_hosts: tuple[str, ...] = ()
    shutdown_grace_seconds: int = 8  # after SIGTERM, requests in flight get this long; Cloud Run kills at 10 s
    admin_token: str = field(default="", repr=False)
    public_url: str = ""
    # Auth (thoth.mcp.auth): who may call /mcp, and who may call /internal/*
    auth_mode: str = "off"  # off | google (Google-signed ID tokens) | tokens (static bearer tokens)
    auth_audiences: tuple[str, ...] = ()  # accepted `aud` of ID tokens; default THOTH_PUBLIC_URL
    auth_members: tuple[str, ...] = ()  # emails / domain:NAME allowed in google mode; empty = any verified
    auth_tokens: tuple[str, ...] = field(default=(), repr=False)  # readers
    # The writer role (thoth.mcp.roles): tokens, or Google members, that may call tools writing the index.
    auth_writer_tokens: tuple[str, ...] = field(default=(), repr=False)
    auth_writers: tuple[str, ...] = ()  # emails / domain:NAME with the writer role in google mode
    auth_trust_edge: bool = False  # Cloud Run's IAM check verified the token (and stripped its signature)
    auth_certs_url: str = GOOGLE_CERTS_URL
    internal_identities: tuple[str, ...] = ()  # service accounts allowed on /internal/* besides the admin token
    source_base_urls: tuple[tuple[str, str], ...] = ()  # (source_id, base URL) for public page URLs
    # Bounded results (read_page, context bundles): the default size and the hard maximum, in characters.
    max_chars: int = 20_000
    max_chars_limit: int = 100_000
    # Logging
    log_level: str = "INFO"
    log_json: bool = False
    gcp_project: str = ""  # for Cloud Logging trace ids: projects/{gcp_project}/traces/{trace}
    # GCS: the emulator's URL (STORAGE_EMULATOR_HOST) switches on emulator-only storage options.
    storage_emulator_host: str = ""
    # Ingest
    pdf_password: str = ""
    # Scanned PDF pages (no text layer) read by OCR (thoth/writes/parsers/pdf_ocr.py): seconds a page on
    # a laptop core, so off by default; the container image turns it on.
    pdf_ocr: bool = False
    max_document_bytes: int = 2 * 1024 * 1024  # ingest_document's limit (UTF-8 bytes of file_content)
    ingest_batch_chunks: int = 512  # chunks embedded and written together (one commit per table)
    progress_seconds: float = 5.0  # a JSON progress line this often when stderr is not a terminal
    task_index: int = 0  # Cloud Run Jobs: this task's index and the number of tasks splitting the plan
    task_count: int = 1
    # Web sources (thoth/writes/web.py): politeness a public site accepts, and bounds on one crawl.
    crawl_max_pages: int = 1000
    crawl_max_depth: int = 8  # link hops from the start URL and the sitemap / llms.txt seeds
    crawl_max_bytes: int = 5 * 1024 * 1024  # a page larger than this is recorded as too large, not read
    crawl_timeout_seconds: float = 15.0
    crawl_concurrency: int = 2  # requests in flight at once
    crawl_rate: float = 2.0  # requests started per second at most (robots.txt's Crawl-delay can slow it further)
    crawl_retries: int = 2  # retries of a timeout, 429 or 5xx, with exponential backoff (Retry-After honoured)
    crawl_user_agent: str = "ThothBot/1.0 (+https://github.com/thoth)"
    # Git sources (thoth/writes/git_source.py): a token for private repositories, never logged.
    git_token: str = field(default="", repr=False)
    git_token_file: str = ""  # a mounted secret holding the token (read when THOTH_GIT_TOKEN is unset)
    # Citations
    citation_mode: str = ""  # signed | gs | portal | file; empty: portal if a base URL is set, else by source
    portal_base_url: str = ""
    signed_url_seconds: int = 900
    signing_key_file: str = ""  # a service-account JSON key; without it ADC signs (IAM signBlob on Cloud Run)
    signing_service_account: str = ""  # the account IAM signBlob signs as (default: the ADC account)
    # Free-form extras for storage (e.g. GCS emulator options); filled by `storage_options()`.
    env: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: object) -> Settings:
        env: Mapping[str, str] = os.environ if environ is None else environ  # read, never copied: see tests
        backend = env.get("THOTH_EMBED_BACKEND", cls.embed_backend).strip().lower()
        if backend not in ("torch", "onnx"):
            raise ConfigError(f"THOTH_EMBED_BACKEND must be 'torch' or 'onnx', got {backend!r}")
        level = env.get("THOTH_LOG_LEVEL", env.get("LOG_LEVEL", cls.log_level)).upper()
        if level not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
            raise ConfigError(f"THOTH_LOG_LEVEL must be DEBUG, INFO, WARNING, ERROR or CRITICAL, got {level!r}")
        chunk_tokens = _int(env, "THOTH_CHUNK_TOKENS", cls.chunk_tokens, 32, 254)
        max_chars_limit = _int(env, "THOTH_MAX_CHARS_LIMIT", cls.max_chars_limit, 1_000, 10_000_000)
        max_chars = _int(env, "THOTH_MAX_CHARS", min(cls.max_chars, max_chars_limit), 100, max_chars_limit)
        task_count = _int(env, "CLOUD_RUN_TASK_COUNT", cls.task_count, 1, 10_000)
        task_index = _int(env, "CLOUD_RUN_TASK_INDEX", cls.task_index, 0, task_count - 1)
        settings = cls(
            db_uri=_db_uri(env),
            read_consistency_seconds=_float(env, "THOTH_READ_CONSISTENCY_SECONDS", cls.read_consistency_seconds),
            embed_provider=_choice(env, "THOTH_EMBED_PROVIDER", cls.embed_provider, EMBED_PROVIDERS),
            lance_cache_mb=_int(env, "THOTH_LANCE_CACHE_MB", cls.lance_cache_mb, 0, 1_000_000),
            maintain_retention_minutes=_int(
                env, "THOTH_MAINTAIN_RETENTION_MINUTES", cls.maintain_retention_minutes, 0, 10_000_000
            ),
            maintain_after_writes=_int(env, "THOTH_MAINTAIN_AFTER_WRITES", cls.maintain_after_writes, 0, 1_000_000),
            write_wait_seconds=_float(env, "THOTH_WRITE_WAIT_SECONDS", cls.write_wait_seconds),
            embed_model=env.get("THOTH_EMBED_MODEL", cls.embed_model),
            embed_url=env.get("THOTH_EMBED_URL", "").rstrip("/"),
            embed_api_key=env.get("THOTH_EMBED_API_KEY", ""),
            embed_api_key_file=env.get("THOTH_EMBED_API_KEY_FILE", ""),
            embed_dimensions=_int(env, "THOTH_EMBED_DIMENSIONS", cls.embed_dimensions, 0, 65_536),
            embed_concurrency=_int(env, "THOTH_EMBED_CONCURRENCY", cls.embed_concurrency, 1, 256),
            embed_retries=_int(env, "THOTH_EMBED_RETRIES", cls.embed_retries, 0, 20),
            embed_timeout_seconds=_float(env, "THOTH_EMBED_TIMEOUT_SECONDS", cls.embed_timeout_seconds),
            embed_backend=backend,
            embed_batch_size=_int(env, "THOTH_EMBED_BATCH_SIZE", cls.embed_batch_size, 0, 4096),
            embed_int8=env.get("THOTH_EMBED_INT8", "").lower() in ("1", "true", "yes"),
            embed_query_prompt=env.get("THOTH_EMBED_QUERY_PROMPT", ""),
            embed_document_prompt=env.get("THOTH_EMBED_DOCUMENT_PROMPT", ""),
            embed_query_task=env.get("THOTH_EMBED_QUERY_TASK", cls.embed_query_task).strip().upper(),
            embed_document_task=env.get("THOTH_EMBED_DOCUMENT_TASK", cls.embed_document_task).strip().upper(),
            rerank_provider=_choice(env, "THOTH_RERANK_PROVIDER", cls.rerank_provider, RERANK_PROVIDERS),
            rerank_model=env.get("THOTH_RERANK_MODEL", "").strip(),
            rerank_url=env.get("THOTH_RERANK_URL", "").strip(),
            rerank_api_key=env.get("THOTH_RERANK_API_KEY", ""),
            rerank_top_n=_int(env, "THOTH_RERANK_TOP_N", cls.rerank_top_n, 1, 1000),
            rerank_timeout_seconds=_float(env, "THOTH_RERANK_TIMEOUT_SECONDS", cls.rerank_timeout_seconds),
            query_cache_size=_int(env, "THOTH_QUERY_CACHE_SIZE", cls.query_cache_size, 0, 1_000_000),
            search_threads=_int(env, "THOTH_SEARCH_THREADS", cls.search_threads, 0, 1024),
            cache_dir=env.get("THOTH_CACHE_DIR", cls.cache_dir),
            chunk_tokens=chunk_tokens,
            tree_build=env.get("THOTH_TREE_BUILD", "1").strip().lower() not in ("0", "false", "no", "off"),
            tree_reducer=_choice(env, "THOTH_TREE_REDUCER", cls.tree_reducer, ("pca", "umap")),
            tree_cluster_tokens=_int(env, "THOTH_TREE_CLUSTER_TOKENS", cls.tree_cluster_tokens, 256, 1_000_000),
            tree_summary_tokens=_int(env, "THOTH_TREE_SUMMARY_TOKENS", cls.tree_summary_tokens, 32, 254),
            tree_drift_max=_float(env, "THOTH_TREE_DRIFT_MAX", cls.tree_drift_max),
            **_llm(env),  # type: ignore[arg-type]
            vector_index_min_rows=_int(env, "THOTH_VECTOR_INDEX_MIN_ROWS", cls.vector_index_min_rows, 0, 10**12),
            host=env.get("THOTH_HOST", env.get("HOST", cls.host)),
            port=_int(env, "PORT", cls.port, 0, 65535),
            workers=_int(env, "THOTH_WORKERS", cls.workers, 1, 64),
            toolsets=_toolsets(env),
            allowed_hosts=tuple(_list(env, "THOTH_ALLOWED_HOSTS")),
            shutdown_grace_seconds=_int(env, "THOTH_SHUTDOWN_GRACE_SECONDS", cls.shutdown_grace_seconds, 0, 3600),
            admin_token=env.get("THOTH_ADMIN_TOKEN", ""),
            public_url=env.get("THOTH_PUBLIC_URL", "").rstrip("/"),
            **_auth(env),  # type: ignore[arg-type]
            source_base_urls=_base_urls(env),
            max_chars=max_chars,
            max_chars_limit=max_chars_limit,
            log_level=level,
            storage_emulator_host=env.get("STORAGE_EMULATOR_HOST", "").rstrip("/"),
            pdf_password=env.get("THOTH_PDF_PASSWORD", ""),
            pdf_ocr=_bool(env, "THOTH_PDF_OCR"),
            max_document_bytes=_int(env, "THOTH_MAX_DOCUMENT_BYTES", cls.max_document_bytes, 1, 16 * 1024 * 1024),
            ingest_batch_chunks=_int(env, "THOTH_INGEST_BATCH_CHUNKS", cls.ingest_batch_chunks, 1, 100_000),
            progress_seconds=_float(env, "THOTH_PROGRESS_SECONDS", cls.progress_seconds),
            task_index=task_index,
            task_count=task_count,
            crawl_max_pages=_int(env, "THOTH_CRAWL_MAX_PAGES", cls.crawl_max_pages, 1, 1_000_000),
            crawl_max_depth=_int(env, "THOTH_CRAWL_MAX_DEPTH", cls.crawl_max_depth, 0, 100),
            crawl_max_bytes=_int(env, "THOTH_CRAWL_MAX_BYTES", cls.crawl_max_bytes, 1024, 1024**3),
            crawl_timeout_seconds=_float(env, "THOTH_CRAWL_TIMEOUT_SECONDS", cls.crawl_timeout_seconds),
            crawl_concurrency=_int(env, "THOTH_CRAWL_CONCURRENCY", cls.crawl_concurrency, 1, 64),
            crawl_rate=_float(env, "THOTH_CRAWL_RATE", cls.crawl_rate),
            crawl_retries=_int(env, "THOTH_CRAWL_RETRIES", cls.crawl_retries, 0, 10),
            crawl_user_agent=env.get("THOTH_CRAWL_USER_AGENT", cls.crawl_user_agent),
            git_token=env.get("THOTH_GIT_TOKEN", ""),
            git_token_file=env.get("THOTH_GIT_TOKEN_FILE", ""),
            citation_mode=_citation_mode(env),
            portal_base_url=env.get("THOTH_PORTAL_BASE_URL", "").rstrip("/"),
            signed_url_seconds=_int(env, "THOTH_SIGNED_URL_SECONDS", cls.signed_url_seconds, 1, 604800),
            signing_key_file=env.get("THOTH_SIGNING_KEY_FILE", ""),
            signing_service_account=env.get("THOTH_SIGNING_SERVICE_ACCOUNT", ""),
            log_json=bool(env.get("K_SERVICE")) or env.get("THOTH_LOG_FORMAT", "").lower() == "json",
            gcp_project=next((env[k] for k in _PROJECT_VARS if env.get(k)), ""),
            env=dict(env),
        )
        _check_reranker(settings)
        return replace(settings, **overrides) if overrides else settings

    @property
    def uses_emulator(self) -> bool:
        return bool(self.storage_emulator_host)

    def storage_options(self) -> dict[str, str]:
        """LanceDB storage options for `db_uri`.

        In production (gs:// on GCP) none are needed: credentials come from the environment (ADC, the
        Cloud Run service account). Against the emulator, Lance's default GCS backend cannot write, the
        OpenDAL one can (DESIGN.md "Testing against real parts"); those options never apply otherwise.
        """
        if self.is_local_db or not self.uses_emulator:
            return {}
        return {
            "use_opendal": "true",
            "endpoint": self.storage_emulator_host,
            "skip_signature": "true",
            "disable_vm_metadata": "true",
            "disable_config_load": "true",
        }

    def storage_env(self) -> dict[str, str]:
        """Environment variables Lance itself reads, to be set before it writes (emulator only)."""
        if self.is_local_db or not self.uses_emulator:
            return {}
        return {"LANCE_INITIAL_UPLOAD_SIZE": EMULATOR_UPLOAD_SIZE}  # the emulator has no multipart upload

    @property
    def is_local_db(self) -> bool:
        return "://" not in self.db_uri

    def base_url(self, source_id: str) -> str | None:
        return dict(self.source_base_urls).get(source_id)
