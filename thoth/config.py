"""Every setting Thoth reads from the environment, as one table of `Setting` rows (docs/architecture.md).

Only this module reads environment variables. The table drives reading them, the error for a bad value and
README's configuration table (`python -m thoth.config --markdown`; tests/test_config.py holds README to it).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from thoth.errors import ThothError

DEFAULT_DB_URI = "./.thoth/lancedb"
DEFAULT_MODEL = "all-MiniLM-L6-v2"
# Where vectors come from (docs/models.md): the bundled or a local model in this process, or an endpoint
EMBED_PROVIDERS = ("local", "local-int8", "sentence-transformers", "openai", "vertex")
REMOTE_EMBED_PROVIDERS = ("openai", "vertex")
# The optional reranker (thoth/retrieval/rerank.py): none, a /rerank endpoint in Cohere's shape (Cohere, Jina,
# vLLM) or text-embeddings-inference's, the Vertex AI ranking API, or a local sentence-transformers cross-encoder
RERANK_PROVIDERS = ("none", "cohere", "tei", "vertex", "cross-encoder")
ALL_TOOLSETS = ("handbook", "qurio", "workshop", "research", "raptor", "sources")
AUTH_MODES = ("off", "google", "tokens", "oauth")
GOOGLE_ISSUER = "https://accounts.google.com"
CITATION_MODES = ("signed", "gs", "portal", "file")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
# How often a server looks for tables another process wrote; one that takes object events writes and
# reads at every read instead (THOTH_INTERNAL_IDENTITIES or THOTH_ADMIN_TOKEN set)
READ_CONSISTENCY_SECONDS = 5.0
# The GCS emulator (fake-gcs-server) takes Lance writes only through the OpenDAL backend, in one upload.
EMULATOR_UPLOAD_SIZE = "1073741824"
# The one spelling of a boolean: anything else is refused, never read as false (or true).
TRUE_WORDS = ("1", "true", "yes", "on")
FALSE_WORDS = ("0", "false", "no", "off")


class ConfigError(ThothError, ValueError):
    """A setting has a value Thoth cannot use; the message names the variable."""


@dataclass(frozen=True)
class Setting:
    """One environment variable: its name, type, default, what it may be, and what it is for."""

    name: str
    type: str  # how the variable's text is read: a key of READERS
    default: object  # the value when the variable is unset or empty
    allowed: tuple = ()  # int and float: (smallest, largest); choice and list: the values allowed
    help: str = ""  # README's "meaning" column
    # The Settings field it fills: by default the name without THOTH_, lower case; "" when from_env
    # combines the row with others (_combined)
    field: str | None = None
    shown: str = ""  # README's default column, where the default alone would mislead
    secret: bool = False  # kept out of `repr(settings)`; also read from a file named by NAME_FILE

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, f"{self.name}_FILE") if self.secret else (self.name,)

    def __post_init__(self) -> None:
        if self.field is None:
            object.__setattr__(self, "field", self.name.removeprefix("THOTH_").lower())

    def read(self, env: Mapping[str, str]) -> object:
        raw = env.get(self.name)
        if raw:
            return READERS[self.type](self, raw)
        path = env.get(f"{self.name}_FILE") if self.secret else None
        if path:  # a mounted secret
            try:
                return READERS[self.type](self, Path(path).read_text().strip())
            except OSError as exc:
                raise ConfigError(f"{self.name}_FILE {path!r} cannot be read: {exc.strerror}") from None
        return self.default

    def what_is_allowed(self) -> str:
        """What the variable may be, as an error message says it."""
        if self.type == "bool":
            return "true or false (or 1/0, yes/no, on/off)"
        if self.type in ("int", "float"):
            lo, hi = (_number(bound) for bound in self.allowed)
            return f"between {lo} and {hi}"
        return f"one of {', '.join(self.allowed)}"

    def shown_default(self) -> str:
        if self.shown:
            return self.shown
        default = self.default
        if default in ("", ()):
            return ""
        if isinstance(default, bool):
            return "`true`" if default else "`false`"
        if isinstance(default, tuple):
            return f"`{','.join(default)}`"
        return f"`{_number(default) if isinstance(default, float) else default}`"


def _number(value: object) -> object:
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _refuse(setting: Setting, got: object, kind: str = "") -> ConfigError:
    return ConfigError(f"{setting.name} must be {kind}{setting.what_is_allowed()}, got {got!r}")


def _bounded(setting: Setting, raw: str) -> int | float:
    """An int or a float setting, within its (smallest, largest)."""
    number, kind = (int, "an integer ") if setting.type == "int" else (float, "a number ")
    try:
        value = number(raw.strip())
    except ValueError:
        raise _refuse(setting, raw, kind) from None
    lo, hi = setting.allowed
    if not lo <= value <= hi:  # NaN fails too
        raise _refuse(setting, value)
    return value


def _bool(setting: Setting, raw: str) -> bool:
    word = raw.strip().lower()
    if word in TRUE_WORDS or word in FALSE_WORDS:
        return word in TRUE_WORDS
    raise _refuse(setting, raw)


def _choice(setting: Setting, raw: str) -> str:
    """Case-insensitive; the value as the table spells it."""
    spelled = {choice.lower(): choice for choice in setting.allowed}
    value = raw.strip().lower()
    if value not in spelled:
        raise _refuse(setting, value)
    return spelled[value]


def _items(raw: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(item.strip() for item in raw.split(",") if item.strip()))


def _tokens(setting: Setting, raw: str) -> tuple[str, ...]:
    """Bearer tokens, comma-separated or one a line (a mounted secret's form); `#` lines are comments."""
    lines = [line for line in raw.splitlines() if not line.lstrip().startswith("#")]
    tokens = _items(",".join(lines))
    if any(len(token) < 16 for token in tokens):  # never echo a token, not even a bad one
        raise ConfigError(f"{setting.name}: every token must be at least 16 characters")
    return tokens


def _list(setting: Setting, raw: str) -> tuple[str, ...]:
    """Comma-separated, each item once; with choices, every item one of them."""
    items = _items(raw)
    unknown = [item for item in items if setting.allowed and item not in setting.allowed]
    if unknown:
        allowed = ", ".join(setting.allowed)
        raise ConfigError(f"{setting.name} has unknown value(s) {', '.join(unknown)}; allowed: {allowed}")
    return items or setting.default  # type: ignore[return-value]


def _members(setting: Setting, raw: str) -> tuple[str, ...]:
    """IAM-style members a token's identity can be checked against: emails or `domain:example.com`.

    `user:` and `serviceAccount:` prefixes are accepted (and dropped) so the same list can be given to
    terraform's invoker bindings; `group:` cannot be checked from a token and is refused.
    """
    members = []
    for item in _items(raw):
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
                f"{setting.name}: {item!r} is not an email, user:EMAIL, serviceAccount:EMAIL or domain:NAME "
                "(groups cannot be checked from a token)"
            )
    return tuple(dict.fromkeys(members))


def _base_urls(setting: Setting, raw: str) -> tuple[tuple[str, str], ...]:
    """source_id=https://base,other=https://...: public page URLs per source."""
    pairs = []
    for item in _items(raw):
        source_id, sep, url = item.partition("=")
        source_id, url = source_id.strip(), url.strip()
        if not sep or not source_id or not url.startswith(("http://", "https://")):
            raise ConfigError(f"{setting.name} entries must look like source_id=https://host/path, got {item!r}")
        pairs.append((source_id, url))
    return tuple(pairs)


# How each type of setting is read from its variable's text (never empty: an empty variable is unset).
READERS: dict[str, Callable[[Setting, str], object]] = {
    "text": lambda setting, raw: raw,  # verbatim, spaces included
    "str": lambda setting, raw: raw.strip(),
    "url": lambda setting, raw: raw.strip().rstrip("/"),
    "int": _bounded,
    "float": _bounded,
    "bool": _bool,
    "choice": _choice,
    "list": _list,
    "members": _members,
    "tokens": _tokens,
    "base_urls": _base_urls,
}

# One row a setting, laid out to be read as a table.
# fmt: off
SETTINGS: tuple[Setting, ...] = (
    # Storage
    Setting("THOTH_DB_URI", "str", "", (),
            "the LanceDB database: a folder, or `gs://bucket/prefix`", field="", shown="`./.thoth/lancedb`"),
    Setting("GCS_BUCKET_NAME", "str", "", (),
            "when set and `THOTH_DB_URI` is not: `gs://$GCS_BUCKET_NAME/lancedb`", field=""),
    Setting("THOTH_CACHE_DIR", "str", "./.thoth", (), "exported ONNX models and other derived files"),
    # Serving
    Setting("PORT", "int", 8080, (0, 65_535), "HTTP port"),
    Setting("THOTH_HOST", "str", "127.0.0.1", (),
            "interface to listen on (`0.0.0.0` in containers)"),
    Setting("THOTH_ALLOWED_HOSTS", "list", (), (),
            "comma-separated Host headers to accept (DNS-rebinding protection); a loopback server accepts "
            "loopback names only, a public one leaves the check to the platform"),
    Setting("THOTH_TOOLSETS", "list", ALL_TOOLSETS, ALL_TOOLSETS,
            "comma-separated tool surfaces to serve (`handbook`, `qurio`, `workshop`, `research`, `raptor`, "
            "`sources`: the writer's tools that add, refresh and remove sources)",
            shown="all"),
    Setting("THOTH_WORKERS", "int", 1, (1, 64),
            "server processes sharing the port, each with its own model and tables (~560 MB each at 1M chunks); "
            "on 2 vCPUs one is the measured choice ([docs/performance.md](docs/performance.md))"),
    Setting("THOTH_SOURCE_BASE_URLS", "base_urls", (), (),
            "`source_id=https://base,…`: public page URLs per source (`handbook=https://handbook.example.com`)"),
    # Access (thoth.mcp.auth, thoth.mcp.roles)
    Setting("THOTH_PUBLIC_URL", "url", "", (),
            "the server's public URL: the default accepted audience of ID tokens; with `oauth`, the issuer and "
            "(with `/mcp`) the resource"),
    Setting("THOTH_AUTH", "choice", "off", AUTH_MODES,
            "who may call `/mcp`: `off`, `google` (Google-signed ID tokens, verified by the app), `tokens` "
            "(static bearer tokens) or `oauth` (people sign in: MCP OAuth, "
            "[docs/deploy.md](docs/deploy.md#people-sign-in-thoth_authoauth))", field="auth_mode"),
    Setting("THOTH_OAUTH_ISSUER", "url", GOOGLE_ISSUER, (),
            "with `oauth`: the upstream OpenID Connect provider's issuer URL, found by discovery (Google, Okta, "
            "Entra ID, Keycloak, Auth0)"),
    Setting("THOTH_OAUTH_CLIENT_ID", "str", "", (), "with `oauth`: Thoth's own client id at that provider"),
    Setting("THOTH_OAUTH_CLIENT_SECRET", "text", "", (), "with `oauth`: that client's secret", secret=True),
    Setting("THOTH_OAUTH_KEY_FILE", "str", "", (),
            "with `oauth`: a PEM private key (EC P-256 or RSA) that signs and seals what Thoth issues; every "
            "instance mounts the same one"),
    Setting("THOTH_AUTH_AUDIENCES", "list", (), (),
            "accepted `aud` of ID tokens, comma-separated", field="", shown="`THOTH_PUBLIC_URL`"),
    Setting("THOTH_AUTH_MEMBERS", "members", (), (),
            "with `google` or `oauth`: allowed emails / `user:`/`serviceAccount:` emails / `domain:NAME`, "
            "comma-separated",
            shown="(any)"),
    Setting("THOTH_AUTH_TOKENS", "tokens", (), (),
            "with `tokens`: the accepted bearer tokens (16+ characters each), comma-separated or one a line (a "
            "Secret Manager secret; `#` lines are comments)", secret=True),
    Setting("THOTH_AUTH_WRITER_TOKENS", "tokens", (), (),
            "with `tokens`: bearer tokens with the writer role (may call `ingest_document`), as "
            "`THOTH_AUTH_TOKENS`; the others only read ([docs/security.md](docs/security.md))", secret=True),
    Setting("THOTH_AUTH_WRITERS", "members", (), (),
            "with `google` or `oauth`, or `off` behind Cloud Run IAM: identities with the writer role, as "
            "`THOTH_AUTH_MEMBERS`", shown="(none)"),
    Setting("THOTH_ACCESS_FILE", "str", "", (),
            "a YAML file naming who may read and write each collection (docs/security.md, \"Collections shared "
            "with some people\"); without it every caller reads every collection", shown="(none)"),
    Setting("THOTH_TRUST_CLOUD_RUN_IAM", "bool", False, (),
            "trust the identity Cloud Run's IAM check verified (its token arrives with the signature removed); "
            "only on a service that is not public", field="auth_trust_edge"),
    Setting("THOTH_ADMIN_TOKEN", "text", "", (),
            "bearer token for `/internal/*` routes (disabled unless it or `THOTH_INTERNAL_IDENTITIES` is set)",
            secret=True),
    Setting("THOTH_INTERNAL_IDENTITIES", "members", (), (),
            "service accounts allowed on `/internal/*` besides `THOTH_ADMIN_TOKEN` (e.g. the Pub/Sub push "
            "identity); with either set, the server takes object events and so reads the index afresh at every "
            "read"),
    # Embedding (docs/models.md)
    Setting("THOTH_EMBED_PROVIDER", "choice", "local", EMBED_PROVIDERS,
            "where vectors come from ([docs/models.md](docs/models.md)): `local` (the bundled or a local model on "
            "onnxruntime, no torch; exported once under `THOTH_CACHE_DIR`), `local-int8` (the same, dynamically "
            "quantised int8 weights: faster, cosine ≈ 0.99 to fp32), `sentence-transformers` (the bundled or a "
            "local model on torch: GPUs, any sentence-transformers model), `openai` "
            "(any OpenAI-compatible `/v1/embeddings`: OpenAI, vLLM, text-embeddings-inference, Ollama) or "
            "`vertex` (Vertex AI text embeddings with application default credentials, project "
            "`THOTH_GCP_PROJECT`, region `GOOGLE_CLOUD_LOCATION`; `pip install 'thoth[vertex]'`)", field=""),
    Setting("THOTH_EMBED_MODEL", "str", DEFAULT_MODEL, (),
            "embedding model: the bundled one, a sentence-transformers folder or name, or the model an `openai` "
            "endpoint serves (hybrid search scales cosines from a floor: the bundled model's dev-chosen 0.2, any "
            "other model's measured on its index at ingest)"),
    Setting("THOTH_EMBED_URL", "url", "", (),
            "`openai` provider: the endpoint's base URL, e.g. `http://127.0.0.1:8000/v1` (`/embeddings` is "
            "added); `vertex`: another API endpoint than `https://{location}-aiplatform.googleapis.com` (Private "
            "Service Connect)"),
    Setting("THOTH_EMBED_API_KEY", "text", "", (),
            "`openai` provider: the bearer key (none sent when empty)", secret=True),
    Setting("THOTH_EMBED_DIMENSIONS", "int", 0, (0, 65_536),
            "`openai` and `vertex` providers: the vector size to ask for (Vertex's `outputDimensionality`) "
            "(models with shortened embeddings); every answer is checked against it. `0`: the model's own"),
    Setting("THOTH_EMBED_QUERY_PROMPT", "text", "", (),
            "put before every query embedded, verbatim (e5: `query: `; bge: `Represent this sentence for "
            "searching relevant passages: `); recorded with the index ([docs/models.md](docs/models.md))"),
    Setting("THOTH_EMBED_DOCUMENT_PROMPT", "text", "", (),
            "put before every chunk and tree summary embedded, verbatim (e5: `passage: `); recorded with the "
            "index"),
    # The optional reranker (thoth/retrieval/rerank.py)
    Setting("THOTH_RERANK_PROVIDER", "choice", "none", RERANK_PROVIDERS,
            "the optional reranker of hybrid search's first hits ([docs/models.md](docs/models.md)): `none`, "
            "`cohere` (a `/rerank` endpoint in Cohere's shape: Cohere, Jina, vLLM), `tei` "
            "(text-embeddings-inference's `/rerank`), `vertex` (the Vertex AI ranking API of Discovery Engine, "
            "with application default credentials, project `THOTH_GCP_PROJECT`) or `cross-encoder` (a local "
            "sentence-transformers cross-encoder folder, on torch)"),
    Setting("THOTH_RERANK_URL", "str", "", (),
            "`cohere`/`tei`: the endpoint's full URL, e.g. `http://127.0.0.1:8080/rerank`; `vertex`: another API "
            "root than `https://discoveryengine.googleapis.com` (a Private Service Connect endpoint)"),
    Setting("THOTH_RERANK_MODEL", "str", "", (),
            "`cohere`: the model the endpoint serves; `vertex`: the ranking model (default "
            "`semantic-ranker-default@latest`); `cross-encoder`: the model's folder"),
    Setting("THOTH_RERANK_API_KEY", "text", "", (),
            "`cohere`/`tei`: the bearer key (none sent when empty)", secret=True),
    # RAPTOR trees
    Setting("THOTH_TREES", "choice", "extractive", ("extractive", "llm", "off"),
            "the ingest job's RAPTOR trees ([docs/raptor.md](docs/raptor.md)): summaries `extractive` or by the "
            "`llm`, or `off` (no trees; a change marks an existing one stale)", field=""),
    # The optional LLM: generated answers, and tree summaries when THOTH_TREES=llm
    Setting("THOTH_LLM_MODEL", "str", "", (),
            "the optional LLM: with `THOTH_LLM_URL`, a model of that OpenAI-compatible endpoint; without, a "
            "Gemini model on Vertex AI (`gemini-2.0-flash`; `pip install 'thoth[gemini]'`)"),
    Setting("THOTH_LLM_URL", "str", "", (),
            "an OpenAI-compatible endpoint's base URL, e.g. `http://127.0.0.1:8000/v1`"),
    Setting("THOTH_LLM_API_KEY", "text", "", (), "that endpoint's bearer token", secret=True),
    Setting("GOOGLE_CLOUD_LOCATION", "str", "us-central1", (),
            "Gemini LLM and `vertex` embeddings: Vertex AI region", field="gcp_location"),
    Setting("THOTH_GCP_PROJECT", "str", "", (),
            "the Google Cloud project: of the Cloud Logging trace ids, and the one Vertex AI bills"),
    # Ingest
    Setting("THOTH_PDF_PASSWORD", "text", "", (), "password tried on encrypted PDFs", secret=True),
    Setting("THOTH_PDF_OCR", "bool", False, (),
            "read PDF pages without a text layer by OCR (RapidOCR on onnxruntime, models in the package); their "
            "chunks are `content_type` `ocr` and their partition stores the recogniser's confidence "
            "(`partitions.ocr_confidence`)", shown="`false` (`true` in the image)"),
    Setting("THOTH_PDF_FIGURES", "bool", True, (),
            "keep each captioned PDF figure as a PNG beside the index (`figures/` of the database folder or "
            "bucket, named by content hash; at most 1600 pixels a side, 60 a document); its caption is a chunk "
            "of `content_type` `figure` that `get_figure` shows as an image"),
    Setting("CLOUD_RUN_TASK_INDEX", "int", 0, (0, 9999),
            "this ingest task's share of the work (set by Cloud Run Jobs): its index, below "
            "`CLOUD_RUN_TASK_COUNT`", field=""),
    Setting("CLOUD_RUN_TASK_COUNT", "int", 1, (1, 10_000),
            "the number of ingest tasks splitting the work (set by Cloud Run Jobs)", field="task_count"),
    # Web and git sources (docs/sources.md)
    Setting("THOTH_GIT_TOKEN", "text", "", (),
            "git sources: a token for private HTTPS repositories (sent as an HTTP header, never logged or put on "
            "a command line)", secret=True),
    Setting("THOTH_INGEST_JOB", "str", "", (),
            "`projects/P/locations/R/jobs/J`: `add_source` and `refresh_source` start executions of this Cloud "
            "Run job; unset, a child process of the server ([docs/sources.md](docs/sources.md))"),
    # Citations
    Setting("THOTH_PORTAL_BASE_URL", "url", "", (),
            "base URL of a document portal: `portal` citations, `resolve_citation`'s default mode when set (else "
            "`signed` for gs:// documents, signed with the application default credentials, `file` for local "
            "ones)"),
    # Logging and the platform
    Setting("THOTH_LOG_LEVEL", "choice", "INFO", LOG_LEVELS, "log level"),
    Setting("K_SERVICE", "str", "", (),
            "set by Cloud Run (the service's name): log lines are JSON objects", field=""),
    Setting("STORAGE_EMULATOR_HOST", "url", "", (),
            "a GCS emulator's URL: google-cloud-storage talks to it anonymously and LanceDB uses the "
            "emulator-only storage options ([docs/gcs.md](docs/gcs.md)); never set in production"),
)
# fmt: on


def _defaults_from_table(cls: type) -> type:
    """Give each field its row's default (kept out of repr when secret): one place says a default."""
    for setting in SETTINGS:
        if setting.field:
            if setting.field not in cls.__annotations__:
                raise TypeError(f"{setting.name} fills {setting.field!r}, which Settings does not have")
            setattr(cls, setting.field, field(default=setting.default, repr=not setting.secret))
    return cls


@dataclass(frozen=True)
@_defaults_from_table
class Settings:
    """What a process runs with: the rows of SETTINGS read once, and the fields several rows decide."""

    # Storage
    db_uri: str = DEFAULT_DB_URI  # THOTH_DB_URI, else GCS_BUCKET_NAME's lancedb prefix
    read_consistency_seconds: float = READ_CONSISTENCY_SECONDS  # -1: never (a bench's index nobody writes)
    cache_dir: str
    storage_emulator_host: str  # switches on emulator-only storage options
    # Serving
    host: str
    port: int
    workers: int
    toolsets: tuple[str, ...]
    allowed_hosts: tuple[str, ...]
    source_base_urls: tuple[tuple[str, str], ...]
    # Access (thoth.mcp.auth and thoth.mcp.roles)
    public_url: str
    auth_mode: str
    auth_audiences: tuple[str, ...] = ()  # THOTH_AUTH_AUDIENCES, else the public URL
    auth_members: tuple[str, ...]
    access_file: str
    auth_tokens: tuple[str, ...]
    auth_writer_tokens: tuple[str, ...]
    auth_writers: tuple[str, ...]
    auth_trust_edge: bool
    oauth_issuer: str  # THOTH_AUTH=oauth (thoth.mcp.oauth): the upstream OpenID Connect provider
    oauth_client_id: str
    oauth_client_secret: str
    oauth_key_file: str
    admin_token: str
    internal_identities: tuple[str, ...]
    # Embedding and reranking
    embed_provider: str = "local"  # local, openai or vertex (THOTH_EMBED_PROVIDER's local ones: the two below)
    embed_backend: str = "onnx"  # local: onnx, or torch (sentence-transformers)
    embed_int8: bool = False  # onnx: the int8 model (local-int8)
    embed_model: str
    embed_url: str
    embed_api_key: str
    embed_dimensions: int
    embed_query_prompt: str
    embed_document_prompt: str
    rerank_provider: str
    rerank_url: str
    rerank_model: str
    rerank_api_key: str
    # RAPTOR trees and the optional LLM
    tree_build: bool = True  # THOTH_TREES is not off
    tree_summariser: str = "extractive"  # or llm
    llm_model: str
    llm_url: str
    llm_api_key: str
    gcp_location: str
    gcp_project: str
    # Ingest, web and git sources
    pdf_password: str
    pdf_ocr: bool
    pdf_figures: bool
    task_index: int = 0  # CLOUD_RUN_TASK_INDEX, below task_count
    task_count: int
    git_token: str
    ingest_job: str
    # Citations
    portal_base_url: str
    # Logging
    log_level: str
    log_json: bool = False  # on Cloud Run (K_SERVICE)

    # Per index, no variable: tuning values are constants of the modules that use them, but these differ
    # between indexes one process builds side by side (a test's small trees, a bench's cache sizes), so an
    # index's Settings carry them (`Settings.from_env(chunk_tokens=80)`; the ingest job's `main` takes them).
    lance_cache_mb: int = 0  # a cap on LanceDB's caches; 0: a quarter of the instance's memory, 64-1024 MB
    # Chunks: the model reads 256 word pieces (254 plus [CLS]/[SEP]); chunks stay well inside. Their
    # overlap is thoth.writes.chunking.OVERLAP_TOKENS. Chosen on the dev splits (docs/benchmarks.md).
    chunk_tokens: int = 200
    # RAPTOR trees (docs/raptor.md): the summariser's input limit (larger clusters are split again) and a
    # summary's budget in word pieces
    tree_cluster_tokens: int = 3500
    tree_summary_tokens: int = 200

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: object) -> Settings:
        env: Mapping[str, str] = os.environ if environ is None else environ  # read, never copied: see tests
        values = {setting.name: setting.read(env) for setting in SETTINGS}
        fields_ = {setting.field: values[setting.name] for setting in SETTINGS if setting.field}
        settings = cls(**fields_, **_combined(values))  # type: ignore[arg-type]
        _check_reranker(settings)
        return replace(settings, **overrides) if overrides else settings

    @property
    def uses_emulator(self) -> bool:
        return bool(self.storage_emulator_host)

    @property
    def emulated_db(self) -> bool:
        """The database is a bucket of the GCS emulator, whose writes Lance makes only with options of its own."""
        return self.uses_emulator and "://" in self.db_uri

    def storage_options(self) -> dict[str, str]:
        """LanceDB storage options for `db_uri`: none in production (credentials come from the environment);
        on the emulator the OpenDAL backend, the one of Lance's that can write to it (docs/gcs.md)."""
        if not self.emulated_db:
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
        if not self.emulated_db:
            return {}
        return {"LANCE_INITIAL_UPLOAD_SIZE": EMULATOR_UPLOAD_SIZE}  # the emulator has no multipart upload

    @property
    def llm_provider(self) -> str:
        """The optional LLM's kind, as its model and URL say: "" (none), "openai" (an endpoint) or "gemini"."""
        return ("openai" if self.llm_url else "gemini") if self.llm_model else ""

    def base_url(self, source_id: str) -> str | None:
        return dict(self.source_base_urls).get(source_id)


def _combined(values: Mapping[str, object]) -> dict[str, object]:
    """The fields more than one row decides, after the checks across rows."""
    bucket = values["GCS_BUCKET_NAME"]
    db_uri = values["THOTH_DB_URI"] or (f"gs://{bucket}/lancedb" if bucket else DEFAULT_DB_URI)
    task_index, task_count = values["CLOUD_RUN_TASK_INDEX"], values["CLOUD_RUN_TASK_COUNT"]
    if task_index >= task_count:  # type: ignore[operator]
        raise ConfigError(f"CLOUD_RUN_TASK_INDEX must be between 0 and {task_count - 1}, got {task_index}")  # type: ignore[operator]
    internal = values["THOTH_ADMIN_TOKEN"] or values["THOTH_INTERNAL_IDENTITIES"]  # it writes: reads afresh
    embedder = values["THOTH_EMBED_PROVIDER"]
    return {
        "db_uri": db_uri,
        "read_consistency_seconds": 0.0 if internal else READ_CONSISTENCY_SECONDS,
        "task_index": task_index,
        "log_json": bool(values["K_SERVICE"]),
        "embed_provider": "local" if embedder in ("local-int8", "sentence-transformers") else embedder,
        "embed_backend": "torch" if embedder == "sentence-transformers" else "onnx",
        "embed_int8": embedder == "local-int8",
        **_llm(values),
        **_auth(values),
    }


def _llm(values: Mapping[str, object]) -> dict[str, object]:
    """The optional LLM (answers, and tree summaries when THOTH_TREES=llm): named by its model."""
    model, url, trees = values["THOTH_LLM_MODEL"], values["THOTH_LLM_URL"], values["THOTH_TREES"]
    if url and not model:
        raise ConfigError("THOTH_LLM_URL needs THOTH_LLM_MODEL, the model that endpoint serves")
    if trees == "llm" and not model:
        raise ConfigError("THOTH_TREES=llm needs an LLM: set THOTH_LLM_MODEL (and THOTH_LLM_URL for an endpoint)")
    return {
        "tree_build": trees != "off",
        "tree_summariser": "llm" if trees == "llm" else "extractive",
    }


def _auth(values: Mapping[str, object]) -> dict[str, object]:
    mode, public_url = values["THOTH_AUTH"], values["THOTH_PUBLIC_URL"]
    audiences = values["THOTH_AUTH_AUDIENCES"] or ((public_url,) if public_url else ())
    tokens, writer_tokens = values["THOTH_AUTH_TOKENS"], values["THOTH_AUTH_WRITER_TOKENS"]
    if set(tokens) & set(writer_tokens):  # type: ignore[call-overload]  # one token, two roles: which one was meant is unclear
        raise ConfigError("a token is in both THOTH_AUTH_TOKENS and THOTH_AUTH_WRITER_TOKENS; list it once")
    if mode == "tokens" and not (tokens or writer_tokens):
        raise ConfigError("THOTH_AUTH=tokens needs THOTH_AUTH_TOKENS or THOTH_AUTH_WRITER_TOKENS")
    if mode == "google" and not audiences and not values["THOTH_TRUST_CLOUD_RUN_IAM"]:
        raise ConfigError("THOTH_AUTH=google needs THOTH_AUTH_AUDIENCES or THOTH_PUBLIC_URL (the expected audience)")
    if mode == "oauth":
        _check_oauth(values)
    return {"auth_audiences": audiences}


def _check_oauth(values: Mapping[str, object]) -> None:
    """THOTH_AUTH=oauth's checks across rows."""
    needed = ("THOTH_PUBLIC_URL", "THOTH_OAUTH_CLIENT_ID", "THOTH_OAUTH_CLIENT_SECRET", "THOTH_OAUTH_KEY_FILE")
    missing = [name for name in needed if not values[name]]
    if missing:
        raise ConfigError(f"THOTH_AUTH=oauth needs {', '.join(missing)}")
    for name in ("THOTH_PUBLIC_URL", "THOTH_OAUTH_ISSUER"):
        url = str(values[name])
        scheme, _, rest = url.partition("://")
        loopback = rest.split("/")[0].rsplit(":", 1)[0] in ("127.0.0.1", "localhost", "[::1]")
        if not (scheme == "https" or (scheme == "http" and loopback)):
            raise ConfigError(f"{name} must be an https URL (http only on a loopback address), got {url!r}")


def _check_reranker(settings: Settings) -> None:
    """A reranker that cannot run is said at start, not skipped at every search."""
    provider = settings.rerank_provider
    if provider in ("cohere", "tei") and not settings.rerank_url:
        raise ConfigError(f"THOTH_RERANK_PROVIDER={provider} needs THOTH_RERANK_URL, e.g. http://127.0.0.1:8080/rerank")
    if provider == "vertex" and not settings.gcp_project:
        raise ConfigError("THOTH_RERANK_PROVIDER=vertex needs THOTH_GCP_PROJECT, the project the ranking API bills")
    if provider == "cross-encoder" and not settings.rerank_model:
        raise ConfigError("THOTH_RERANK_PROVIDER=cross-encoder needs THOTH_RERANK_MODEL, the model's folder")


def markdown_table() -> str:
    """README's configuration table, one line a row of SETTINGS."""
    lines = ["| variable | default | meaning |", "|---|---|---|"]
    for setting in SETTINGS:
        names = ", ".join(f"`{name}`" for name in setting.names)
        default = setting.shown_default()
        lines.append(f"| {names} | {default + ' ' if default else ''}| {setting.help} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    if sys.argv[1:] != ["--markdown"]:
        sys.exit("usage: python -m thoth.config --markdown   (prints README's configuration table)")
    sys.stdout.write(markdown_table())
