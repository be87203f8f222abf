"""Settings read from the environment: storage on GCS, ingest tasks, citations, and README's table of them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from thoth.config import ConfigError, Settings

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
        {
            "THOTH_PDF_PASSWORD": "hunter2",
            "THOTH_PORTAL_BASE_URL": "https://portal.example.org/docs/",
            "THOTH_CITATION_MODE": "Portal",
            "THOTH_SIGNED_URL_SECONDS": "60",
        }
    )
    assert settings.pdf_password == "hunter2" and settings.portal_base_url == "https://portal.example.org/docs"
    assert (settings.citation_mode, settings.signed_url_seconds) == ("portal", 60)
    with pytest.raises(ConfigError, match="THOTH_CITATION_MODE must be one of signed, gs, portal, file"):
        Settings.from_env({"THOTH_CITATION_MODE": "cdn"})
    with pytest.raises(ConfigError, match="THOTH_SIGNED_URL_SECONDS"):
        Settings.from_env({"THOTH_SIGNED_URL_SECONDS": "604801"})  # V4 signed URLs last 7 days at most
    assert "research" in Settings.from_env({}).toolsets


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


# Read by the process before Thoth's settings exist, by glibc and cap_malloc_arenas (server and ingest job).
READ_ELSEWHERE = {"MALLOC_ARENA_MAX": "thoth/freed.py"}


def _readme_settings() -> set[str]:
    """Every variable named in the first column of README's "Configuration" table."""
    text = (ROOT / "README.md").read_text()
    section = text.split("\n## Configuration\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return {name for row in rows for name in re.findall(r"`([A-Z][A-Z0-9_]*)`", row.split("|")[1])}


def test_every_setting_read_is_in_the_readme_table_and_the_reverse() -> None:
    env = _Recording()
    Settings.from_env(env)  # with nothing set, every variable is asked for (no setting hides another)
    documented = _readme_settings()
    assert sorted(env.asked - documented) == [], "settings read by thoth/config.py but missing from README"
    assert sorted(documented - env.asked - set(READ_ELSEWHERE)) == [], "README rows that nothing reads"
    for name, path in READ_ELSEWHERE.items():
        assert name in documented and f'"{name}"' in (ROOT / path).read_text()
