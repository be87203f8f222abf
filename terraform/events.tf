# Cloud Storage events -> Pub/Sub -> push (OIDC, as the trigger account) -> events service
# /internal/gcs-events, which ingests or deletes that one object. The scheduled job is the
# backstop: whatever an event missed, the next run finds by comparing hashes.

data "google_storage_project_service_account" "gcs" {
  project = var.project_id
}

resource "google_pubsub_topic" "gcs_events" {
  name       = "${var.name}-gcs-events"
  depends_on = [google_project_service.apis]
}

resource "google_pubsub_topic" "gcs_events_dead" {
  name                       = "${var.name}-gcs-events-dead"
  message_retention_duration = "604800s"
  depends_on                 = [google_project_service.apis]
}

resource "google_pubsub_topic_iam_member" "gcs_publishes" {
  topic  = google_pubsub_topic.gcs_events.id
  role   = "roles/pubsub.publisher"
  member = "serviceAccount:${data.google_storage_project_service_account.gcs.email_address}"
}

resource "google_storage_notification" "docs" {
  bucket             = google_storage_bucket.docs.name
  payload_format     = "JSON_API_V1"
  topic              = google_pubsub_topic.gcs_events.id
  event_types        = var.event_types
  object_name_prefix = var.docs_prefix
  depends_on         = [google_pubsub_topic_iam_member.gcs_publishes]
}

resource "google_pubsub_subscription" "gcs_events_push" {
  name                       = "${var.name}-gcs-events-push"
  topic                      = google_pubsub_topic.gcs_events.id
  ack_deadline_seconds       = 60
  message_retention_duration = "604800s"
  expiration_policy {
    ttl = "" # never expires for inactivity
  }
  retry_policy {
    minimum_backoff = "10s"
    maximum_backoff = "600s"
  }
  dead_letter_policy {
    dead_letter_topic     = google_pubsub_topic.gcs_events_dead.id
    max_delivery_attempts = 10
  }
  push_config {
    push_endpoint = "${local.events_url}/internal/gcs-events"
    oidc_token {
      service_account_email = google_service_account.trigger.email
      audience              = local.events_url
    }
  }
  depends_on = [
    google_cloud_run_v2_service.events,
    google_cloud_run_v2_service_iam_member.trigger_invokes_events,
    google_service_account_iam_member.pubsub_signs_as_trigger,
  ]
}

# Pub/Sub's service agent moves undeliverable messages to the dead-letter topic.
resource "google_pubsub_topic_iam_member" "dead_letter_publish" {
  topic  = google_pubsub_topic.gcs_events_dead.id
  role   = "roles/pubsub.publisher"
  member = local.pubsub_agent
}

resource "google_pubsub_subscription_iam_member" "dead_letter_ack" {
  subscription = google_pubsub_subscription.gcs_events_push.id
  role         = "roles/pubsub.subscriber"
  member       = local.pubsub_agent
}

# The scheduled ingest run (Cloud Run Admin API jobs.run, as the trigger account).
resource "google_cloud_scheduler_job" "ingest" {
  name             = "${var.name}-ingest"
  region           = var.region
  schedule         = var.ingest_schedule
  time_zone        = var.time_zone
  attempt_deadline = "60s"
  retry_config {
    retry_count = 1
  }
  http_target {
    http_method = "POST"
    uri         = "https://run.googleapis.com/v2/projects/${var.project_id}/locations/${var.region}/jobs/${google_cloud_run_v2_job.ingest.name}:run"
    oauth_token {
      service_account_email = google_service_account.trigger.email
      scope                 = "https://www.googleapis.com/auth/cloud-platform"
    }
  }
  depends_on = [google_cloud_run_v2_job_iam_member.trigger_runs_job]
}

# Index maintenance (compaction, old versions removed, indexes folded in: docs/operations.md), as a run
# of the ingest job with its arguments overridden: one task, after the nightly ingest.
resource "google_cloud_scheduler_job" "maintain" {
  name             = "${var.name}-maintain"
  region           = var.region
  schedule         = var.maintain_schedule
  time_zone        = var.time_zone
  attempt_deadline = "60s"
  retry_config {
    retry_count = 1
  }
  http_target {
    http_method = "POST"
    uri         = "https://run.googleapis.com/v2/projects/${var.project_id}/locations/${var.region}/jobs/${google_cloud_run_v2_job.ingest.name}:run"
    body = base64encode(jsonencode({
      overrides = {
        taskCount          = 1
        containerOverrides = [{ args = ["-m", "ingest", "maintain", "--db", local.db_uri] }]
      }
    }))
    headers = { "Content-Type" = "application/json" }
    oauth_token {
      service_account_email = google_service_account.trigger.email
      scope                 = "https://www.googleapis.com/auth/cloud-platform"
    }
  }
  depends_on = [google_cloud_run_v2_job_iam_member.trigger_overrides_job]
}
