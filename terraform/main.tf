# Thoth on Google Cloud: storage, images, identities. Cloud Run in run.tf, events in events.tf.
#
# Two buckets, not one bucket with IAM conditions on prefixes: `storage.objects.list` is checked
# on the bucket, so a prefix condition cannot limit listing (and LanceDB lists); versioning is a
# bucket setting, and only the documents want it (Lance keeps its own table versions).

data "google_project" "this" {
  project_id = var.project_id
}

locals {
  apis = [
    "artifactregistry.googleapis.com",
    "cloudbuild.googleapis.com",
    "cloudscheduler.googleapis.com",
    "iam.googleapis.com",
    "iamcredentials.googleapis.com",
    "pubsub.googleapis.com",
    "run.googleapis.com",
    "secretmanager.googleapis.com",
    "storage.googleapis.com",
  ]
  docs_bucket  = "${var.project_id}-${var.name}-docs"
  index_bucket = "${var.project_id}-${var.name}-index"
  db_uri       = "gs://${local.index_bucket}/lancedb"
  docs_source  = "gs://${local.docs_bucket}/${trimsuffix(var.docs_prefix, "/")}"
  built_image  = "${var.region}-docker.pkg.dev/${var.project_id}/${var.name}/thoth:${var.image_tag}"
  image        = var.image != "" ? var.image : local.built_image
  # Cloud Run's deterministic URLs, known before the services exist (audiences, THOTH_PUBLIC_URL)
  service_url  = "https://${var.name}-${data.google_project.this.number}.${var.region}.run.app"
  events_url   = "https://${var.name}-events-${data.google_project.this.number}.${var.region}.run.app"
  pubsub_agent = "serviceAccount:service-${data.google_project.this.number}@gcp-sa-pubsub.iam.gserviceaccount.com"
}

resource "google_project_service" "apis" {
  for_each           = toset(local.apis)
  project            = var.project_id
  service            = each.value
  disable_on_destroy = false
}

# --- buckets -----------------------------------------------------------------------------------

resource "google_storage_bucket" "docs" {
  name                        = local.docs_bucket
  location                    = var.region
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"
  force_destroy               = var.force_destroy
  versioning {
    enabled = true # an overwritten or deleted PDF can be restored; citations keep their version_id
  }
  lifecycle_rule {
    condition {
      days_since_noncurrent_time = var.noncurrent_version_days
      with_state                 = "ARCHIVED"
    }
    action {
      type = "Delete"
    }
  }
  depends_on = [google_project_service.apis]
}

resource "google_storage_bucket" "index" {
  name                        = local.index_bucket
  location                    = var.region
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"
  force_destroy               = var.force_destroy
  versioning {
    enabled = false # LanceDB versions its tables itself; object versions would only double the bytes
  }
  soft_delete_policy {
    retention_duration_seconds = 0 # compaction deletes many small files; keeping them 7 days costs
  }
  depends_on = [google_project_service.apis]
}

# Cloud Build's source uploads (gcloud builds submit --gcs-source-staging-dir), kept a week.
resource "google_storage_bucket" "build" {
  name                        = "${var.project_id}-${var.name}-build"
  location                    = var.region
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"
  force_destroy               = true
  lifecycle_rule {
    condition {
      age = 7
    }
    action {
      type = "Delete"
    }
  }
  depends_on = [google_project_service.apis]
}

# --- images ------------------------------------------------------------------------------------

resource "google_artifact_registry_repository" "images" {
  location               = var.region
  repository_id          = var.name
  format                 = "DOCKER"
  description            = "Thoth container images"
  cleanup_policy_dry_run = false
  cleanup_policies {
    id     = "keep-recent"
    action = "KEEP"
    most_recent_versions {
      keep_count = 5
    }
  }
  cleanup_policies {
    id     = "delete-old"
    action = "DELETE"
    condition {
      older_than = "2592000s" # 30 days, beyond the 5 most recent
    }
  }
  depends_on = [google_project_service.apis]
}

# The first image, when none is given: built by Cloud Build from this repository (build and push
# only; later builds through cloudbuild.yaml also deploy). Needs gcloud where terraform runs.
resource "terraform_data" "image" {
  count            = var.image == "" ? 1 : 0
  triggers_replace = [local.built_image]
  provisioner "local-exec" {
    working_dir = "${path.module}/.."
    command     = "gcloud builds submit --project=${var.project_id} --region=${var.region} --config=cloudbuild.yaml --service-account=${google_service_account.build.id} --gcs-source-staging-dir=gs://${google_storage_bucket.build.name}/source --substitutions=_REGION=${var.region},_NAME=${var.name},_IMAGE=${local.built_image},_DEPLOY=false ."
  }
  depends_on = [
    google_artifact_registry_repository_iam_member.build_push,
    google_project_iam_member.build_logs,
    google_storage_bucket_iam_member.build_source,
  ]
}

# --- identities ----------------------------------------------------------------------------------

resource "google_service_account" "server" {
  account_id   = "${var.name}-server"
  display_name = "Thoth MCP service: reads the index"
  depends_on   = [google_project_service.apis]
}

resource "google_service_account" "ingest" {
  account_id   = "${var.name}-ingest"
  display_name = "Thoth ingest job and event handler: reads documents, writes the index"
  depends_on   = [google_project_service.apis]
}

resource "google_service_account" "trigger" {
  account_id   = "${var.name}-trigger"
  display_name = "Thoth triggers: Pub/Sub push and Cloud Scheduler; no data access"
  depends_on   = [google_project_service.apis]
}

resource "google_service_account" "build" {
  account_id   = "${var.name}-build"
  display_name = "Thoth Cloud Build: pushes images, deploys the service and job"
  depends_on   = [google_project_service.apis]
}
