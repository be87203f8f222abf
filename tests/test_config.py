"""Settings read from the environment: storage on GCS, ingest tasks, citations, and README's table of them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from thoth.config import READERS, SETTINGS, ConfigError, Settings, markdown_table

ROOT = Path(__file__).resolve().parent.parent


def test_gcs_bucket_name_alone_means_the_lancedb_prefix() -> None:
    assert Settings.from_env({"GCS_BUCKET_NAME": "papers"}).db_uri == "gs://papers/lancedb"
    assert Settings.from_env({"GCS_BUCKET_NAME": "papers", "THOTH_DB_URI": "gs://x/y"}).db_uri == "gs://x/y"


def test_emulator_options_only_with_the_emulator() -> None:
    production = Settings.from_env({"THOTH_DB_URI": "gs://b/lancedb"})
    assert production.storage_options() == {} and production.storage_env() == {}
    local = Settings.from_env({"THOTH_DB_URI": "/tmp/db", "STORAGE_EMULATOR_HOST": "http://127.0.0.1:9"})
    assert local.storage_options() == {}  # a folder never gets them
    emulated = Settings.from_env({"THOTH_DB_URI": "gs://b/lancedb", "STORAGE_EMULATOR_HOST": "http://127.0.0.1:9/"})
    assert emulated.storage_options() == {
        "use_opendal": "true",
        "endpoint": "http://127.0.0.1:9",
        "skip_signature": "true",
        "disable_vm_metadata": "true",
        "disable_config_load": "true",
    }
    assert emulated.storage_env() == {"LANCE_INITIAL_UPLOAD_SIZE": "1073741824"}


def test_cloud_run_task_split() -> None:
    settings = Settings.from_env({"CLOUD_RUN_TASK_INDEX": "2", "CLOUD_RUN_TASK_COUNT": "4"})
    assert (settings.task_index, settings.task_count) == (2, 4)
    assert (Settings.from_env({}).task_index, Settings.from_env({}).task_count) == (0, 1)
    with pytest.raises(ConfigError, match="CLOUD_RUN_TASK_INDEX must be between 0 and 3"):
        Settings.from_env({"CLOUD_RUN_TASK_INDEX": "4", "CLOUD_RUN_TASK_COUNT": "4"})


def test_ingest_and_citation_settings() -> None:
    settings = Settings.from_env(
        {"THOTH_PDF_PASSWORD": "hunter2", "THOTH_PORTAL_BASE_URL": "https://portal.example.org/docs/"}
    )
    assert settings.pdf_password == "hunter2" and settings.portal_base_url == "https://portal.example.org/docs"
    assert "research" in Settings.from_env({}).toolsets


def test_a_secret_can_come_from_a_file(tmp_path: Path) -> None:
    (tmp_path / "password").write_text("hunter2\n")  # a mounted secret, its newline dropped
    assert Settings.from_env({"THOTH_PDF_PASSWORD_FILE": str(tmp_path / "password")}).pdf_password == "hunter2"
    both = {"THOTH_PDF_PASSWORD": "set", "THOTH_PDF_PASSWORD_FILE": str(tmp_path / "password")}
    assert Settings.from_env(both).pdf_password == "set"  # the variable itself wins
    with pytest.raises(ConfigError, match=r"^THOTH_AUTH_TOKENS_FILE '/nonexistent' cannot be read: No such file"):
        Settings.from_env({"THOTH_AUTH_TOKENS_FILE": "/nonexistent"})
    with pytest.raises(ConfigError, match="THOTH_AUTH_TOKENS: every token must be at least 16 characters"):
        (tmp_path / "tokens").write_text("# readers\nshort\n")
        Settings.from_env({"THOTH_AUTH_TOKENS_FILE": str(tmp_path / "tokens")})
    assert "THOTH_HOST_FILE" not in {name for setting in SETTINGS for name in setting.names}  # secrets only


def test_the_events_service_reads_the_index_afresh() -> None:
    """An instance that takes object events (its /internal routes on) writes, so it reads at every read."""
    assert Settings.from_env({}).read_consistency_seconds == 5.0
    events = Settings.from_env({"THOTH_INTERNAL_IDENTITIES": "serviceAccount:push@p.iam.gserviceaccount.com"})
    assert events.read_consistency_seconds == 0.0
    assert Settings.from_env({"THOTH_ADMIN_TOKEN": "x" * 20}).read_consistency_seconds == 0.0


def test_workers_setting() -> None:
    assert Settings.from_env({}).workers == 1
    assert Settings.from_env({"THOTH_WORKERS": "3"}).workers == 3
    with pytest.raises(ConfigError, match="THOTH_WORKERS must be between 1 and 64, got 0"):
        Settings.from_env({"THOTH_WORKERS": "0"})


class _Recording(dict[str, str]):
    """An environment that remembers every variable asked of it, set or not."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: set[str] = set()

    def get(self, key: str, default: object = None) -> object:  # type: ignore[override]
        self.asked.add(key)
        return super().get(key, default)

    def __getitem__(self, key: str) -> str:
        self.asked.add(key)
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        self.asked.add(str(key))
        return super().__contains__(key)


def _readme_table() -> str:
    """The table under README's "Configuration" heading, as lines starting with `|`."""
    text = (ROOT / "README.md").read_text()
    section = text.split("\n## Configuration\n", 1)[1].split("\n## ", 1)[0]
    return "".join(line + "\n" for line in section.splitlines() if line.startswith("|"))


def _names(table: str) -> set[str]:
    """Every variable named in a table's first column."""
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    return {name for row in rows for name in re.findall(r"`([A-Z][A-Z0-9_]*)`", row.split("|")[1])}


def test_every_setting_read_is_a_row_of_the_table_and_the_reverse() -> None:
    env = _Recording()
    Settings.from_env(env)  # with nothing set, every variable is asked for (no setting hides another)
    in_table = {name for setting in SETTINGS for name in setting.names}
    assert sorted(env.asked - in_table) == [], "variables thoth/config.py reads outside its table"
    assert sorted(in_table - env.asked) == [], "rows of the table that from_env never reads"


def test_readme_configuration_table_is_the_settings_table() -> None:
    readme, table = _readme_table(), markdown_table()
    documented, rows = _names(readme), _names(table)
    assert sorted(rows - documented) == [], "settings missing from README: python -m thoth.config --markdown"
    assert sorted(documented - rows) == [], "README rows that are not settings: python -m thoth.config --markdown"
    assert readme == table, "README's configuration table differs from python -m thoth.config --markdown"


# THOTH_ words that are not settings: a constant's name, the Makefile's and the scripts' own variables, the
# opt-in of the image test
NOT_SETTINGS = {"THOTH_SCHEMES", "THOTH_SCREENSHOTS", "THOTH_TOKEN", "THOTH_TEST_IMAGE", "THOTH_NAME"}
MENTIONED_IN = ["README.md", "Dockerfile", "cloudbuild.yaml", "Makefile", ".ci", "docs", "terraform", "scripts",
                "thoth", "ingest", "bench", "examples"]  # fmt: skip


def test_every_variable_named_in_code_docs_or_deploy_files_is_a_setting() -> None:
    """A variable that is no longer a setting is not named anywhere an operator or a reader would look."""
    rows = {name for setting in SETTINGS for name in setting.names}
    files = [
        p for entry in MENTIONED_IN for p in ([ROOT / entry] if (ROOT / entry).is_file() else (ROOT / entry).rglob("*"))
    ]
    named: dict[str, set[str]] = {}
    for path in files:
        if (
            path.is_file()
            and path.suffix in (".py", ".md", ".tf", ".yaml", ".sh", ".toml", "")
            and "__pycache__" not in str(path)
        ):
            for word in re.findall(r"\bTHOTH_[A-Z0-9_]*[A-Z0-9]\b", path.read_text(errors="replace")):
                if word not in rows and word not in NOT_SETTINGS:
                    named.setdefault(word, set()).add(str(path.relative_to(ROOT)))
    assert named == {}, "not settings (rows of thoth.config.SETTINGS), yet named"


def test_each_row_fills_a_field_with_its_default() -> None:
    defaults = Settings()
    assert Settings.from_env({}) == defaults
    for setting in SETTINGS:
        if setting.field:
            assert getattr(defaults, setting.field) == setting.default, setting.name
        assert setting.type in READERS, setting.name
        if setting.type in ("int", "float"):
            lo, hi = setting.allowed
            assert lo <= setting.default <= hi, setting.name  # type: ignore[operator]
        if setting.type == "choice":
            assert setting.allowed and (setting.default in setting.allowed or setting.default == ""), setting.name
        if setting.secret and setting.field:
            assert f"{setting.field}=" not in repr(defaults), setting.name


@pytest.mark.parametrize("word", ["1", "true", "TRUE", "yes", "On", " on "])
def test_booleans_read_true(word: str) -> None:
    settings = Settings.from_env({"THOTH_TRUST_CLOUD_RUN_IAM": word, "THOTH_PDF_OCR": word})
    assert settings.auth_trust_edge is True and settings.pdf_ocr is True


@pytest.mark.parametrize("word", ["0", "false", "False", "no", "OFF"])
def test_booleans_read_false(word: str) -> None:
    settings = Settings.from_env({"THOTH_PDF_FIGURES": word, "THOTH_TRUST_CLOUD_RUN_IAM": word})
    assert settings.pdf_figures is False and settings.auth_trust_edge is False


@pytest.mark.parametrize(("name", "word"), [("THOTH_PDF_OCR", "enabled"), ("THOTH_PDF_FIGURES", "flase")])
def test_a_boolean_it_does_not_know_is_refused_naming_the_variable(name: str, word: str) -> None:
    with pytest.raises(ConfigError, match=rf"^{name} must be true or false \(or 1/0, yes/no, on/off\), got '{word}'$"):
        Settings.from_env({name: word})


def test_bad_values_are_refused_with_what_is_allowed() -> None:
    with pytest.raises(ConfigError, match=r"^THOTH_EMBED_DIMENSIONS must be an integer between 0 and 65536, got 'x'$"):
        Settings.from_env({"THOTH_EMBED_DIMENSIONS": "x"})
    with pytest.raises(ConfigError, match=r"^THOTH_LOG_LEVEL must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL"):
        Settings.from_env({"THOTH_LOG_LEVEL": "loud"})
    with pytest.raises(ConfigError, match=r"^THOTH_TOOLSETS has unknown value\(s\) quiz; allowed: handbook, qurio"):
        Settings.from_env({"THOTH_TOOLSETS": "handbook,quiz"})
    assert Settings.from_env({"THOTH_LOG_LEVEL": "debug"}).log_level == "DEBUG"  # spelled as the table does
    assert Settings.from_env({"THOTH_TREES": " Off "}).tree_build is False


# Variables the platform sets, not a user: Cloud Run's service name and the ingest job's task split
PLATFORM = {"K_SERVICE", "CLOUD_RUN_TASK_INDEX", "CLOUD_RUN_TASK_COUNT"}


def test_a_user_sets_no_more_than_45_settings_and_only_thoth_config_reads_the_environment() -> None:
    """Each setting left is something an operator has a reason to change; tuning values are constants in the
    modules that use them (docs/architecture.md)."""
    thoth = [setting.name for setting in SETTINGS if setting.name.startswith("THOTH_")]
    assert len(thoth) <= 45, thoth
    assert len([setting for setting in SETTINGS if setting.name not in PLATFORM]) <= 50
    reads = re.compile(r"""(environ\.get\(|getenv\(|environ\[)\s*["'](THOTH_|K_SERVICE|CLOUD_RUN_|PORT\b)""")
    readers = [
        str(path.relative_to(ROOT))
        for folder in ("thoth", "ingest")
        for path in (ROOT / folder).rglob("*.py")
        if reads.search(path.read_text()) and path != ROOT / "thoth" / "config.py"
    ]
    assert readers == [], "only thoth.config reads a setting from the environment"
