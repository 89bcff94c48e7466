"""A real `sluice serve` (the embedded default, the local runtime) for the
SDK's tests: its binary from SLUICE_BIN, else the workspace's target
directory."""

from __future__ import annotations

import glob
import os
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

from sluice import Sluice

REPO = Path(__file__).resolve().parents[3]
PREVIEW_DOMAIN = "preview.test"


def _binary() -> Path:
    if os.environ.get("SLUICE_BIN"):
        return Path(os.environ["SLUICE_BIN"])
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    return target / "debug" / "sluice"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Served:
    """A running `sluice serve`: its URL, token and output."""

    def __init__(self) -> None:
        self.dir = tempfile.TemporaryDirectory(prefix="sluice-sdk-")
        self.data_dir = Path(self.dir.name) / "data"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.preview_port = free_port()
        self.log = open(Path(self.dir.name) / "serve.log", "w+b")
        self.process: subprocess.Popen[bytes] | None = None
        self.start()
        self.token = (self.data_dir / "api-token").read_text().strip()

    def start(self) -> None:
        env = {k: v for k, v in os.environ.items() if k not in ("SLUICE_API_TOKENS", "SLUICE_DATABASE_URL")}
        argv = [str(_binary()), "serve", "--data-dir", str(self.data_dir)]
        argv += ["--listen", f"127.0.0.1:{self.port}", "--runtime", "local"]
        argv += ["--preview-listen", f"127.0.0.1:{self.preview_port}", "--preview-domain", PREVIEW_DOMAIN]
        self.process = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"sluice serve exited: {self.output()}")
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=1) as answer:
                    if answer.status == 200:
                        return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"sluice serve did not become healthy: {self.output()}")

    def through_preview(self, url: str) -> tuple[int, str]:
        """curl through the preview listener, trusting the server's own
        certificate for the preview domain: (HTTP status, body)."""
        host = url.split("://", 1)[1].split("/", 1)[0].split(":", 1)[0]
        ca = self.data_dir / "preview-tls" / PREVIEW_DOMAIN / "cert.pem"
        argv = ["curl", "-sS", "--max-time", "10", "-o", "-", "-w", "\n%{http_code}"]
        argv += ["--resolve", f"{host}:{self.preview_port}:127.0.0.1", "--cacert", str(ca), url]
        out = subprocess.run(argv, capture_output=True, text=True, check=False).stdout
        body, _, status = out.rpartition("\n")
        return int(status or 0), body

    def restart(self) -> None:
        self.stop()
        self.start()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def output(self) -> str:
        self.log.flush()
        self.log.seek(0)
        return self.log.read().decode(errors="replace")


def stop_executors(data_dir: Path) -> None:
    """Ends what the server's local executors run: each daemon's process
    group, then what its workload left in the run's cgroups (the daemons
    own their executors, so stopping the server leaves them running)."""
    executors = data_dir / "executors"
    runs = [run for run in executors.iterdir() if run.is_dir()] if executors.is_dir() else []
    for run in runs:
        origin = run / "origin"
        started = origin.read_text().strip() if origin.exists() else run.name
        try:
            pid = int((run / "daemon.pid").read_text().strip())
            if started.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                os.killpg(pid, signal.SIGKILL)
        except (OSError, ValueError):
            pass
        for procs in glob.glob(f"/sys/fs/cgroup/sluice-*/{started}/cgroup.procs") + glob.glob(
            f"/sys/fs/cgroup/*/sluice-*/{started}/cgroup.procs"
        ):
            for line in Path(procs).read_text().split():
                try:
                    os.kill(int(line), signal.SIGKILL)
                except (OSError, ValueError):
                    pass


@pytest.fixture(scope="session")
def served():
    server = Served()
    yield server
    server.stop()
    stop_executors(server.data_dir)
    server.dir.cleanup()


@pytest.fixture
def client(served):
    with Sluice(served.url, served.token, owner="alice") as client:
        yield client
