# The MCP service (reads the index), the events service (ingests one object per Cloud Storage
# event, as the writer account, one instance so writes do not race) and the ingest job.
# cloudbuild.yaml deploys new images; terraform keeps everything else (so it ignores the image).

locals {
  common_env = {
    THOTH_DB_URI      = local.db_uri
    THOTH_GCP_PROJECT = var.project_id # Cloud Logging trace ids: projects/PROJECT/traces/ID
  }
  server_env = merge(local.common_env, {
    THOTH_PUBLIC_URL          = local.service_url
    THOTH_AUTH                = var.app_auth
    THOTH_AUTH_MEMBERS        = join(",", var.app_auth_members)
    THOTH_AUTH_WRITERS        = join(",", var.app_auth_writers) # empty: no caller may write the index
    THOTH_TRUST_CLOUD_RUN_IAM = var.allow_unauthenticated ? "false" : "true"
    THOTH_OAUTH_ISSUER        = var.oauth_issuer
    THOTH_OAUTH_CLIENT_ID     = var.oauth_client_id
    THOTH_OAUTH_KEY_FILE      = var.oauth_key_secret != "" ? "${local.oauth_key_dir}/key.pem" : ""
    # add_source / refresh_source (writers) start executions of the ingest job (docs/sources.md)
    THOTH_INGEST_JOB = "projects/${var.project_id}/locations/${var.region}/jobs/${var.name}-ingest"
  })
  oauth_key_dir = "/secrets/oauth-key" # the signing key's secret, mounted as a file
  events_env = merge(local.common_env, {
    THOTH_PUBLIC_URL = local.events_url
    # the Pub/Sub push identity; with it the service writes object events, and reads at every read
    THOTH_INTERNAL_IDENTITIES = google_service_account.trigger.email
    THOTH_TRUST_CLOUD_RUN_IAM = "true" # only the trigger account (and admins) can invoke it
  })
  server_secrets = merge(
    var.auth_tokens_secret != "" ? { THOTH_AUTH_TOKENS = var.auth_tokens_secret } : {},
    var.auth_writer_tokens_secret != "" ? { THOTH_AUTH_WRITER_TOKENS = var.auth_writer_tokens_secret } : {},
    var.oauth_client_secret_secret != "" ? { THOTH_OAUTH_CLIENT_SECRET = var.oauth_client_secret_secret } : {},
  )
  events_secrets = var.admin_token_secret != "" ? { THOTH_ADMIN_TOKEN = var.admin_token_secret } : {}
}

resource "google_cloud_run_v2_service" "server" {
  name                = var.name
  location            = var.region
  ingress             = "INGRESS_TRAFFIC_ALL"
  deletion_protection = false

  template {
    service_account                  = google_service_account.server.email
    max_instance_request_concurrency = var.concurrency
    timeout                          = "300s"
    scaling {
      min_instance_count = var.min_instances
      max_instance_count = var.max_instances
    }
    dynamic "volumes" {
      for_each = var.oauth_key_secret != "" ? [var.oauth_key_secret] : []
      content {
        name = "oauth-key"
        secret {
          secret = volumes.value
          items {
            version = "latest"
            path    = "key.pem"
          }
        }
      }
    }
    containers {
      image = local.image
      dynamic "volume_mounts" {
        for_each = var.oauth_key_secret != "" ? [local.oauth_key_dir] : []
        content {
          name       = "oauth-key"
          mount_path = volume_mounts.value
        }
      }
      ports {
        container_port = 8080
      }
      resources {
        limits = {
          cpu    = var.cpu
          memory = var.memory
        }
        cpu_idle = true # billed only while serving
        # Cold start is CPU-bound Python imports (the MCP SDK and lancedb, ~2 CPU s): the boost gives the
        # start more CPU until the startup probe passes (bench.coldstart, docs/benchmarks.md).
        startup_cpu_boost = true
      }
      dynamic "env" {
        for_each = local.server_env
        content {
          name  = env.key
          value = env.value
        }
      }
      dynamic "env" {
        for_each = local.server_secrets
        content {
          name = env.key
          value_source {
            secret_key_ref {
              secret  = env.value
              version = "latest"
            }
          }
        }
      }
      # /health: 200 once the index is readable; the header lets a first deploy (before the first
      # ingest, an empty index) through, while a wrong bucket or missing permission still fails it.
      startup_probe {
        initial_delay_seconds = 0
        period_seconds        = 2
        timeout_seconds       = 2
        failure_threshold     = 30
        http_get {
          path = "/health"
          port = 8080
          http_headers {
            name  = "X-Thoth-Probe"
            value = "startup"
          }
        }
      }
    }
  }

  lifecycle {
    ignore_changes = [template[0].containers[0].image, client, client_version]
    precondition {
      condition     = var.app_auth != "oauth" || (var.oauth_client_id != "" && var.oauth_client_secret_secret != "" && var.oauth_key_secret != "")
      error_message = "app_auth = \"oauth\" needs oauth_client_id, oauth_client_secret_secret and oauth_key_secret."
    }
  }
  depends_on = [
    terraform_data.image,
    google_storage_bucket_iam_member.server_reads_index,
    google_secret_manager_secret_iam_member.server_reads_tokens,
    google_secret_manager_secret_iam_member.server_reads_oauth_secrets,
  ]
}

resource "google_cloud_run_v2_service" "events" {
  name                = "${var.name}-events"
  location            = var.region
  ingress             = "INGRESS_TRAFFIC_ALL" # Pub/Sub push comes from outside the VPC; IAM guards it
  deletion_protection = false

  template {
    service_account                  = google_service_account.ingest.email
    max_instance_request_concurrency = 4
    timeout                          = "600s"
    scaling {
      min_instance_count = 0
      max_instance_count = 1 # one writer at a time
    }
    containers {
      image = local.image
      ports {
        container_port = 8080
      }
      resources {
        limits = {
          cpu    = var.job_cpu
          memory = var.job_memory
        }
        cpu_idle = true
      }
      dynamic "env" {
        for_each = local.events_env
        content {
          name  = env.key
          value = env.value
        }
      }
      dynamic "env" {
        for_each = local.events_secrets
        content {
          name = env.key
          value_source {
            secret_key_ref {
              secret  = env.value
              version = "latest"
            }
          }
        }
      }
      startup_probe {
        period_seconds    = 2
        timeout_seconds   = 2
        failure_threshold = 30
        http_get {
          path = "/health"
          port = 8080
          http_headers {
            name  = "X-Thoth-Probe"
            value = "startup"
          }
        }
      }
    }
  }

  lifecycle {
    ignore_changes = [template[0].containers[0].image, client, client_version]
  }
  depends_on = [
    terraform_data.image,
    google_storage_bucket_iam_member.ingest_writes_index,
    google_storage_bucket_iam_member.ingest_reads_docs,
    google_secret_manager_secret_iam_member.admin_token,
  ]
}

resource "google_cloud_run_v2_job" "ingest" {
  name                = "${var.name}-ingest"
  location            = var.region
  deletion_protection = false

  template {
    task_count  = var.job_task_count
    parallelism = var.job_parallelism
    template {
      service_account = google_service_account.ingest.email
      timeout         = var.job_timeout
      max_retries     = var.job_max_retries
      containers {
        image   = local.image
        command = ["python"]
        args    = ["-m", "ingest", "--source", local.docs_source, "--db", local.db_uri, "--name", var.source_name]
        resources {
          limits = {
            cpu    = var.job_cpu
            memory = var.job_memory
          }
        }
        dynamic "env" {
          for_each = local.common_env
          content {
            name  = env.key
            value = env.value
          }
        }
      }
    }
  }

  lifecycle {
    ignore_changes = [template[0].template[0].containers[0].image, client, client_version]
  }
  depends_on = [
    terraform_data.image,
    google_storage_bucket_iam_member.ingest_writes_index,
    google_storage_bucket_iam_member.ingest_reads_docs,
  ]
}
