"""Settings read from the environment: storage on GCS, ingest tasks, citations."""

from __future__ import annotations

import pytest

from thoth.config import ConfigError, Settings


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
