variable "project_id" {
  type        = string
  description = "Google Cloud project id to deploy into."
}

variable "region" {
  type        = string
  description = "Region for Cloud Run, Artifact Registry, the buckets and Cloud Scheduler (e.g. europe-west1)."
}

variable "name" {
  type        = string
  description = "Prefix of every resource name (service, job, buckets, service accounts)."
  default     = "thoth"
  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{1,18}$", var.name))
    error_message = "name must be 2-19 lowercase letters, digits or dashes, starting with a letter."
  }
}

variable "image" {
  type        = string
  description = "Container image to run. Empty: terraform builds it from this repository with Cloud Build (needs gcloud) and tags it image_tag."
  default     = ""
}

variable "image_tag" {
  type        = string
  description = "Tag of the image terraform builds when image is empty; change it to rebuild."
  default     = "initial"
}

variable "invoker_members" {
  type        = list(string)
  description = "IAM members allowed to call the MCP service, e.g. [\"user:alice@example.com\", \"group:team@example.com\", \"serviceAccount:ci@p.iam.gserviceaccount.com\"]."
  default     = []
}

variable "allow_unauthenticated" {
  type        = bool
  description = "Let anyone reach the service past Cloud Run's IAM check (for MCP clients that cannot send Google ID tokens). Requires app_auth = \"tokens\", \"google\" or \"oauth\"."
  default     = false
}

variable "app_auth" {
  type        = string
  description = "THOTH_AUTH inside the app: off (Cloud Run IAM is the check), google (Google ID tokens verified by the app), tokens (static bearer tokens from auth_tokens_secret) or oauth (people sign in with the oauth_issuer provider; MCP clients connect as custom connectors)."
  default     = "off"
  validation {
    condition     = contains(["off", "google", "tokens", "oauth"], var.app_auth)
    error_message = "app_auth must be off, google, tokens or oauth."
  }
}

variable "oauth_issuer" {
  type        = string
  description = "THOTH_OAUTH_ISSUER with app_auth = oauth: the issuer URL of the OpenID Connect provider people sign in with (Google by default; Okta, Entra ID, Keycloak, Auth0 too)."
  default     = "https://accounts.google.com"
}

variable "oauth_client_id" {
  type        = string
  description = "THOTH_OAUTH_CLIENT_ID with app_auth = oauth: Thoth's client id at that provider (a web application client whose redirect URI is SERVICE_URL/oauth/callback)."
  default     = ""
}

variable "oauth_client_secret_secret" {
  type        = string
  description = "Secret Manager secret id holding that client's secret (THOTH_OAUTH_CLIENT_SECRET), for app_auth = oauth."
  default     = ""
}

variable "oauth_key_secret" {
  type        = string
  description = "Secret Manager secret id holding the PEM private key (EC P-256 or RSA) that signs and seals what Thoth issues, mounted as THOTH_OAUTH_KEY_FILE, for app_auth = oauth."
  default     = ""
}

variable "app_auth_members" {
  type        = list(string)
  description = "THOTH_AUTH_MEMBERS with app_auth = google or oauth: emails or domain:NAME allowed; empty allows any Google identity with the right audience."
  default     = []
}

variable "app_auth_writers" {
  type        = list(string)
  description = "THOTH_AUTH_WRITERS: emails or domain:NAME (user:/serviceAccount: prefixes accepted) that may call the tools writing the index (ingest_document). Empty (the default): the MCP service has no writer."
  default     = []
}

variable "auth_writer_tokens_secret" {
  type        = string
  description = "Secret Manager secret id holding the static bearer tokens with the writer role, for app_auth = tokens. Empty (the default): no writer token."
  default     = ""
}

variable "auth_tokens_secret" {
  type        = string
  description = "Secret Manager secret id (in this project) holding the static bearer tokens, one a line, for app_auth = tokens. Empty: none."
  default     = ""
}

variable "admin_token_secret" {
  type        = string
  description = "Secret Manager secret id holding THOTH_ADMIN_TOKEN for the events service's /internal routes, for operators. Empty: they accept only the Pub/Sub push identity."
  default     = ""
}

variable "min_instances" {
  type        = number
  description = "Minimum MCP service instances; 0 scales to zero (no idle cost, a cold start of a few seconds)."
  default     = 0
}

variable "max_instances" {
  type        = number
  description = "Maximum MCP service instances."
  default     = 4
}

# Measured with bench.search (docs/benchmarks.md, "Latency: where a search's time goes"): a search is
# CPU-bound, so 2 vCPUs are saturated by 4 requests at once (it runs them on 2 threads per vCPU,
# thoth.mcp.server.THREADS_PER_CPU; fewer left a core idle, more served no more). From 4 to 16 concurrent clients
# queries/s stays flat and only the wait grows. 8 keeps a short queue for bursts and leaves the rest to
# Cloud Run, which starts another instance when in-flight requests pass 60% of this (CPU, not requests,
# is what runs out).
variable "concurrency" {
  type        = number
  description = "Requests one instance serves at once: 2 vCPUs run 4 searches at a time; more only queue."
  default     = 8
}

# 2 vCPUs: the query embedding (onnxruntime) and LanceDB's searches run without the GIL, so one process
# uses both (concurrent requests on separate threads), and cold start overlaps the model load with the
# imports. With 1 vCPU every concurrent search waits for the same core.
variable "cpu" {
  type        = string
  description = "vCPUs per service instance (2: one process uses both; see the comment above)."
  default     = "2"
}

variable "memory" {
  type        = string
  description = "Memory per service instance. Measured: server RSS about 390 MiB warm (docs/deploy.md); 1Gi leaves room for LanceDB's caches."
  default     = "1Gi"
}

variable "job_task_count" {
  type        = number
  description = "Ingest job tasks per execution; each takes its share of the documents (CLOUD_RUN_TASK_INDEX/COUNT)."
  default     = 4
}

variable "job_parallelism" {
  type        = number
  description = "Ingest tasks running at once."
  default     = 4
}

variable "job_cpu" {
  type        = string
  description = "vCPUs per ingest task (embedding is CPU-bound)."
  default     = "2"
}

variable "job_memory" {
  type        = string
  description = "Memory per ingest task."
  default     = "4Gi"
}

variable "job_timeout" {
  type        = string
  description = "Time limit of one ingest task, e.g. 3600s."
  default     = "3600s"
}

variable "job_max_retries" {
  type        = number
  description = "Retries of a failed (or SIGTERM-stopped, exit 143) ingest task; a rerun finishes the work."
  default     = 3
}

variable "ingest_schedule" {
  type        = string
  description = "Cron schedule of the ingest job in Cloud Scheduler."
  default     = "0 3 * * *"
}

variable "maintain_schedule" {
  type        = string
  description = "Cron schedule of index maintenance (python -m ingest maintain: compaction, version cleanup) in Cloud Scheduler."
  default     = "0 4 * * *"
}

variable "time_zone" {
  type        = string
  description = "Time zone of ingest_schedule."
  default     = "Etc/UTC"
}

variable "docs_prefix" {
  type        = string
  description = "Object prefix of the source documents (PDFs) in the documents bucket; notifications and the job read only it."
  default     = "pdfs/"
}

variable "source_name" {
  type        = string
  description = "Name the ingest job gives the source (its slug is the source id)."
  default     = "library"
}

variable "event_types" {
  type        = list(string)
  description = "Cloud Storage events pushed to /internal/gcs-events. On the versioned documents bucket a delete (or the old generation of an overwrite) arrives as OBJECT_ARCHIVE, which the route handles like OBJECT_DELETE."
  default     = ["OBJECT_FINALIZE", "OBJECT_DELETE", "OBJECT_ARCHIVE"]
}

variable "noncurrent_version_days" {
  type        = number
  description = "Days an overwritten or deleted document version is kept in the versioned documents bucket."
  default     = 30
}

variable "force_destroy" {
  type        = bool
  description = "Let terraform destroy delete the buckets with their contents."
  default     = false
}
