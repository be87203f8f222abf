# Least privilege, every grant on one resource (a bucket, a service, a job, an account), except
# the build's log writing, which Cloud Logging only grants on the project.
#
#   server  (MCP service)    reads the index bucket; signs citation URLs for the documents bucket; starts
#                            the ingest job with overrides (writers' add_source, refresh_source)
#   ingest  (job, events)    reads the documents bucket, writes the index bucket
#   trigger (Pub/Sub, cron)  invokes the events service and runs the job; touches no data
#   build   (Cloud Build)    pushes images, deploys the services and the job as server/ingest

# --- server ---

resource "google_storage_bucket_iam_member" "server_reads_index" {
  bucket = google_storage_bucket.index.name
  role   = "roles/storage.objectViewer"
  member = google_service_account.server.member
}

# resolve_citation answers gs:// documents with V4 signed URLs: the URL grants what the signer can
# read, and on Cloud Run the signature comes from the IAM signBlob API on the account itself.
resource "google_storage_bucket_iam_member" "server_reads_docs" {
  bucket = google_storage_bucket.docs.name
  role   = "roles/storage.objectViewer"
  member = google_service_account.server.member
}

resource "google_service_account_iam_member" "server_signs_urls" {
  service_account_id = google_service_account.server.name
  role               = "roles/iam.serviceAccountTokenCreator"
  member             = google_service_account.server.member
}

resource "google_secret_manager_secret_iam_member" "server_reads_tokens" {
  count     = var.auth_tokens_secret != "" ? 1 : 0
  secret_id = var.auth_tokens_secret
  role      = "roles/secretmanager.secretAccessor"
  member    = google_service_account.server.member
}

resource "google_secret_manager_secret_iam_member" "server_reads_writer_tokens" {
  count     = var.auth_writer_tokens_secret != "" ? 1 : 0
  secret_id = var.auth_writer_tokens_secret
  role      = "roles/secretmanager.secretAccessor"
  member    = google_service_account.server.member
}

# THOTH_AUTH=oauth: the upstream client's secret (an environment variable) and the signing key (a mounted file)
resource "google_secret_manager_secret_iam_member" "server_reads_oauth_secrets" {
  for_each  = toset(compact([var.oauth_client_secret_secret, var.oauth_key_secret]))
  secret_id = each.value
  role      = "roles/secretmanager.secretAccessor"
  member    = google_service_account.server.member
}

resource "google_cloud_run_v2_service_iam_member" "invokers" {
  for_each = toset(var.invoker_members)
  name     = google_cloud_run_v2_service.server.name
  location = var.region
  role     = "roles/run.invoker"
  member   = each.value
}

resource "google_cloud_run_v2_service_iam_member" "public" {
  count    = var.allow_unauthenticated ? 1 : 0
  name     = google_cloud_run_v2_service.server.name
  location = var.region
  role     = "roles/run.invoker"
  member   = "allUsers"
  lifecycle {
    precondition {
      condition     = var.app_auth != "off"
      error_message = "allow_unauthenticated = true needs app_auth = \"tokens\", \"google\" or \"oauth\": the app must check callers itself."
    }
  }
}

# --- ingest ---

resource "google_storage_bucket_iam_member" "ingest_writes_index" {
  bucket = google_storage_bucket.index.name
  role   = "roles/storage.objectUser" # create, overwrite, delete, list: no IAM or ACL changes
  member = google_service_account.ingest.member
}

resource "google_storage_bucket_iam_member" "ingest_reads_docs" {
  bucket = google_storage_bucket.docs.name
  role   = "roles/storage.objectViewer"
  member = google_service_account.ingest.member
}

# The admin token is for operators calling the events service's /internal routes by hand.
resource "google_secret_manager_secret_iam_member" "admin_token" {
  count     = var.admin_token_secret != "" ? 1 : 0
  secret_id = var.admin_token_secret
  role      = "roles/secretmanager.secretAccessor"
  member    = google_service_account.ingest.member
}

# --- trigger ---

resource "google_cloud_run_v2_service_iam_member" "trigger_invokes_events" {
  name     = google_cloud_run_v2_service.events.name
  location = var.region
  role     = "roles/run.invoker"
  member   = google_service_account.trigger.member
}

# Writers' add_source and refresh_source (and cancel_run and remove_source, which the service, a reader of
# the index, has the job do) are executions of the ingest job with their arguments as overrides: the MCP
# service may start those, on this job, and nothing else (not even run.jobs.run without overrides).
resource "google_project_iam_custom_role" "run_ingest_with_overrides" {
  role_id     = "${replace(var.name, "-", "_")}_run_ingest_with_overrides"
  title       = "Start the ${var.name} ingest job with overrides"
  permissions = ["run.jobs.runWithOverrides"]
}

resource "google_cloud_run_v2_job_iam_member" "server_runs_ingest" {
  name     = google_cloud_run_v2_job.ingest.name
  location = var.region
  role     = google_project_iam_custom_role.run_ingest_with_overrides.id
  member   = google_service_account.server.member
}

resource "google_cloud_run_v2_job_iam_member" "trigger_runs_job" {
  name     = google_cloud_run_v2_job.ingest.name
  location = var.region
  role     = "roles/run.invoker" # includes run.jobs.run
  member   = google_service_account.trigger.member
}

# Maintenance runs the job with other arguments: jobs.runWithOverrides, on this job only.
resource "google_cloud_run_v2_job_iam_member" "trigger_overrides_job" {
  name     = google_cloud_run_v2_job.ingest.name
  location = var.region
  role     = "roles/run.jobsExecutorWithOverrides"
  member   = google_service_account.trigger.member
}

# Pub/Sub's service agent mints the push requests' OIDC tokens as the trigger account.
resource "google_service_account_iam_member" "pubsub_signs_as_trigger" {
  service_account_id = google_service_account.trigger.name
  role               = "roles/iam.serviceAccountTokenCreator"
  member             = local.pubsub_agent
}

# --- build ---

resource "google_artifact_registry_repository_iam_member" "build_push" {
  location   = google_artifact_registry_repository.images.location
  repository = google_artifact_registry_repository.images.name
  role       = "roles/artifactregistry.writer"
  member     = google_service_account.build.member
}

resource "google_storage_bucket_iam_member" "build_source" {
  bucket = google_storage_bucket.build.name
  role   = "roles/storage.objectViewer"
  member = google_service_account.build.member
}

resource "google_project_iam_member" "build_logs" {
  project = var.project_id
  role    = "roles/logging.logWriter"
  member  = google_service_account.build.member
}

resource "google_cloud_run_v2_service_iam_member" "build_deploys_server" {
  name     = google_cloud_run_v2_service.server.name
  location = var.region
  role     = "roles/run.developer"
  member   = google_service_account.build.member
}

resource "google_cloud_run_v2_service_iam_member" "build_deploys_events" {
  name     = google_cloud_run_v2_service.events.name
  location = var.region
  role     = "roles/run.developer"
  member   = google_service_account.build.member
}

resource "google_cloud_run_v2_job_iam_member" "build_updates_job" {
  name     = google_cloud_run_v2_job.ingest.name
  location = var.region
  role     = "roles/run.developer"
  member   = google_service_account.build.member
}

# Deploying a revision that runs as an account needs actAs on that account.
resource "google_service_account_iam_member" "build_acts_as" {
  for_each           = { server = google_service_account.server.name, ingest = google_service_account.ingest.name }
  service_account_id = each.value
  role               = "roles/iam.serviceAccountUser"
  member             = google_service_account.build.member
}
