"""A real Prometheus (Debian's `prometheus` package) scraping the DCGM exporter stand-in, for metrics tests.

cfg = scrape_config(["127.0.0.1:9400"])          # YAML text
prom = start(state_dir, ["127.0.0.1:9400"])      # Prometheus object with .url, .query(), .stop()
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import yaml


def scrape_config(targets: list[str], interval: str = "1s", job: str = "nvidia-dcgm-exporter") -> str:
    """prometheus.yml for the given host:port targets (metrics path /metrics)."""
    cfg = {
        "global": {"scrape_interval": interval, "evaluation_interval": interval},
        "scrape_configs": [
            {
                "job_name": job,
                "metrics_path": "/metrics",
                "honor_labels": True,
                "static_configs": [{"targets": list(targets), "labels": {"service": "nvidia-dcgm-exporter"}}],
            }
        ],
    }
    return yaml.safe_dump(cfg, sort_keys=False)


def target_from_url(url: str) -> str:
    return urllib.parse.urlparse(url.strip()).netloc


def find_binary(install: bool = True) -> str:
    path = shutil.which("prometheus") or ("/usr/bin/prometheus" if os.path.exists("/usr/bin/prometheus") else None)
    if path:
        return path
    if install and os.geteuid() == 0 and shutil.which("apt-get"):
        subprocess.run(
            ["apt-get", "install", "-y", "--no-install-recommends", "prometheus"],
            check=False,
            env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=600,
        )
        path = shutil.which("prometheus")
        if path:
            return path
    raise RuntimeError("prometheus not found; install Debian's package: apt-get install -y prometheus")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Prometheus:
    def __init__(self, proc: subprocess.Popen, url: str, workdir: Path):
        self.proc, self.url, self.workdir = proc, url, workdir

    def query(self, promql: str) -> list[dict]:
        q = urllib.parse.urlencode({"query": promql})
        with urllib.request.urlopen(f"{self.url}/api/v1/query?{q}", timeout=10) as r:
            data = json.load(r)
        if data.get("status") != "success":
            raise RuntimeError(f"query failed: {data}")
        return data["data"]["result"]

    def targets_up(self) -> bool:
        with urllib.request.urlopen(f"{self.url}/api/v1/targets", timeout=5) as r:
            data = json.load(r)
        act = data["data"]["activeTargets"]
        return bool(act) and all(t.get("health") == "up" for t in act)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def start(workdir: str | os.PathLike, targets: list[str], timeout: float = 60) -> Prometheus:
    """Start Prometheus on a free loopback port scraping targets every second; wait until it is ready."""
    wd = Path(workdir)
    wd.mkdir(parents=True, exist_ok=True)
    (wd / "prometheus.yml").write_text(scrape_config(targets))
    port = _free_port()
    log = open(wd / "prometheus.log", "ab")  # noqa: SIM115 (handed to the child process)
    proc = subprocess.Popen(
        [
            find_binary(),
            f"--config.file={wd / 'prometheus.yml'}",
            f"--storage.tsdb.path={wd / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    prom = Prometheus(proc, f"http://127.0.0.1:{port}", wd)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"prometheus exited (rc {proc.returncode}); see {wd / 'prometheus.log'}")
        try:
            with urllib.request.urlopen(f"{prom.url}/-/ready", timeout=2) as r:
                if r.status == 200:
                    return prom
        except OSError:
            pass
        time.sleep(0.3)
    prom.stop()
    raise RuntimeError(f"prometheus not ready after {timeout}s; see {wd / 'prometheus.log'}")
