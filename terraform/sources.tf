# Web and git sources (docs/sources.md): each is refreshed on its own schedule by a run of the ingest job
# with its arguments overridden: a re-crawl sends conditional requests, a git source reads only the
# commits since the last run, so an unchanged source costs a few requests and writes nothing. Its scope
# (path, include, exclude) is passed on every run, so the schedule reads exactly what it was given.
variable "remote_sources" {
  type = list(object({
    name     = string # the collection: --name
    source   = string # https://docs.example.com/guide/ or a git URL
    ref      = optional(string, "")
    path     = optional(string, "")       # git: only this folder of the repository
    include  = optional(list(string), []) # globs of paths (or URL paths) to take
    exclude  = optional(list(string), []) # globs of paths to leave out
    schedule = optional(string, "0 4 * * *")
  }))
  description = "Websites and git repositories the ingest job refreshes on a schedule: one Cloud Scheduler trigger each."
  default     = []
}

resource "google_cloud_scheduler_job" "source" {
  for_each         = { for s in var.remote_sources : s.name => s }
  name             = "${var.name}-source-${each.key}"
  region           = var.region
  schedule         = each.value.schedule
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
        taskCount = 1
        containerOverrides = [{
          args = concat(
            ["-m", "ingest", "--source", each.value.source, "--name", each.key, "--db", local.db_uri],
            each.value.ref != "" ? ["--ref", each.value.ref] : [],
            each.value.path != "" ? ["--path", each.value.path] : [],
            flatten([for glob in each.value.include : ["--include", glob]]),
            flatten([for glob in each.value.exclude : ["--exclude", glob]]),
          )
        }]
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
