output "service_url" {
  description = "URL of the MCP service; MCP clients connect to SERVICE_URL/mcp."
  value       = google_cloud_run_v2_service.server.uri
}

output "events_url" {
  description = "URL of the events service that Pub/Sub pushes Cloud Storage events to."
  value       = google_cloud_run_v2_service.events.uri
}

output "docs_bucket" {
  description = "Bucket for the source documents: upload PDFs under docs_prefix."
  value       = "gs://${google_storage_bucket.docs.name}/${var.docs_prefix}"
}

output "index_uri" {
  description = "LanceDB tables (THOTH_DB_URI of the service and the job)."
  value       = local.db_uri
}

output "image" {
  description = "Image the service and job were created with (cloudbuild.yaml deploys later ones)."
  value       = local.image
}

output "curl_commands" {
  description = "Commands to try the deployment: health, initialize, tools/list, a search, the smoke test, an ingest run."
  value       = <<-EOT
    export MCP_URL=${google_cloud_run_v2_service.server.uri}
    export TOKEN=$(gcloud auth print-identity-token)
    curl -H "Authorization: Bearer $TOKEN" "$MCP_URL/health"
    curl -X POST -H "Authorization: Bearer $TOKEN" -H "Content-Type: application/json" -H "Accept: application/json, text/event-stream" -d '{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"curl","version":"1.0"}},"id":1}' "$MCP_URL/mcp"
    curl -X POST -H "Authorization: Bearer $TOKEN" -H "Content-Type: application/json" -d '{"jsonrpc":"2.0","method":"tools/list","id":2}' "$MCP_URL/mcp"
    curl -X POST -H "Authorization: Bearer $TOKEN" -H "Content-Type: application/json" -d '{"jsonrpc":"2.0","method":"tools/call","params":{"name":"search_handbook","arguments":{"query":"how to request time off","num_results":3}},"id":3}' "$MCP_URL/mcp"
    scripts/smoke.sh "$MCP_URL"
    gsutil cp *.pdf gs://${google_storage_bucket.docs.name}/${var.docs_prefix}
    gcloud run jobs execute ${google_cloud_run_v2_job.ingest.name} --region ${var.region} --wait
  EOT
}
