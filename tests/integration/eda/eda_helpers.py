"""The admission rulebook run by the real ansible-rulebook against a test bed (tests/integration/eda/ and
bench/eda_admission.py): its inventory, its variables, its process and log, and what the API server's audit log says
of the gpu_nodes source's requests."""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import yaml

REPO_ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent
NVML_LIB = REPO_ROOT / "build" / "nvml" / "libnvidia-ml.so.1"
#: The User-Agent of the gpu_nodes event source's requests.
SOURCE_AGENT = "gpuops-eda-gpu-nodes"


def sim(state_dir, *args, timeout=300):
    """``python -m tests.sim ARGS`` on the bed in ``state_dir``."""
    return subprocess.run(
        [sys.executable, "-m", "tests.sim", *args, "--state-dir", str(state_dir)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def audit_mark(audit_log):
    """Where the audit log is now: (its size, the time); requests made after it are those of :func:`source_requests`."""
    return os.path.getsize(audit_log), time.time()


def source_requests(audit_log, mark=(0, 0.0)):
    """The gpu_nodes source's requests received after ``mark`` (:func:`audit_mark`), one audit event each (a watch
    is logged when its response starts, so an open watch counts; one that ends later is not counted again)."""
    since, after = mark
    out, seen = [], set()
    with open(audit_log, "rb") as f:
        f.seek(since)
        for line in f:
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            if SOURCE_AGENT not in (ev.get("userAgent") or "") or ev.get("auditID") in seen:
                continue
            received = datetime.datetime.fromisoformat(ev["requestReceivedTimestamp"].replace("Z", "+00:00"))
            if received.timestamp() >= after:
                seen.add(ev.get("auditID"))
                out.append(ev)
    return out


class Rulebook:
    """ansible-rulebook running gpuops.gpu_operator.gpu_node_admission on the bed in ``state_dir`` as the
    least-privilege identity, in ``workdir`` (inventory.yml, vars.yml, reports/, ansible-rulebook.log)."""

    def __init__(self, state_dir, workdir: Path, debounce=3, max_delay=20):
        self.state_dir, self.workdir = Path(state_dir), Path(workdir)
        self.state = json.loads((self.state_dir / "state.json").read_text())
        self.reports = self.workdir / "reports"
        self.inventory = self.workdir / "inventory.yml"
        self.log = self.workdir / "ansible-rulebook.log"
        self.variables = {
            "gpuops_kubeconfig": self.state["sa_kubeconfig"],
            "gpuops_eda_initial": "none",  # the bed's own nodes are not the ones under test
            "gpuops_eda_debounce": debounce,
            "gpuops_eda_max_delay": max_delay,
        }
        self.proc = None

    def expect(self, pool: str, count: int, **variables) -> list[str]:
        """Write the inventory: the bed's, plus the hosts of the next ``count`` nodes of ``pool`` (as a provisioned
        host is listed before its kubelet registers) and ``variables`` for every host; returns their node names."""
        inv = yaml.safe_load(sim(self.state_dir, "inventory").stdout)
        hosts = inv["all"]["children"]["gpu_hosts"]["hosts"]
        last = max(int(n.rsplit("-", 1)[1]) for n in hosts if n.rsplit("-", 1)[0] == pool)
        names = [f"{pool}-{last + 1 + i}" for i in range(count)]
        for name in names:
            hosts[name] = {**hosts[f"{pool}-0"], "k8s_node_name": name}
        inv["all"]["vars"]["gpuops_report_dir"] = str(self.reports)
        inv["all"]["vars"]["gpu_nvml_library"] = str(NVML_LIB)  # the fake NVML (`make nvml`) the hosts load
        inv["all"]["vars"].update(variables)
        self.inventory.write_text(yaml.safe_dump(inv, sort_keys=False))
        return names

    def host_vars(self, name: str, **variables):
        """Give the inventory's host ``name`` ``variables`` (each run of the rulebook reads the inventory again)."""
        inv = yaml.safe_load(self.inventory.read_text())
        inv["all"]["children"]["gpu_hosts"]["hosts"][name].update(variables)
        self.inventory.write_text(yaml.safe_dump(inv, sort_keys=False))

    def env(self):
        return {
            **os.environ,
            "KUBECONFIG": self.state["sa_kubeconfig"],
            "K8S_AUTH_KUBECONFIG": self.state["sa_kubeconfig"],
            "ANSIBLE_COLLECTIONS_PATH": str(REPO_ROOT / "build" / "collections"),
            "ANSIBLE_COLLECTIONS_SCAN_SYS_PATH": "false",
            "PATH": str(BIN) + os.pathsep + os.environ.get("PATH", ""),  # ansible-galaxy, ansible-playbook
        }

    def start(self):
        extra = self.workdir / "vars.yml"
        extra.write_text(yaml.safe_dump(self.variables))
        argv = [str(BIN / "ansible-rulebook"), "-r", "gpuops.gpu_operator.gpu_node_admission"]
        argv += ["-i", str(self.inventory), "-e", str(extra), "-v"]
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(
                argv,
                cwd=self.workdir,
                env=self.env(),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def watching(self, mark) -> bool:
        """True once the source has opened a node watch after ``mark`` (:func:`audit_mark`)."""
        assert self.proc.poll() is None, "ansible-rulebook exited: " + self.tail()
        return any(
            e.get("verb") == "watch" and e.get("objectRef", {}).get("resource") == "nodes"
            for e in source_requests(self.state["audit_log"], mark)
        )

    def playbook(self, name: str, *args: str):
        """ansible-playbook gpuops.gpu_operator.NAME on the same inventory, as the rulebook runs it."""
        argv = [str(BIN / "ansible-playbook"), f"gpuops.gpu_operator.{name}", "-i", str(self.inventory), *args]
        return subprocess.run(
            argv, cwd=self.workdir, env=self.env(), capture_output=True, text=True, timeout=900, check=False
        )

    def tail(self, chars: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
