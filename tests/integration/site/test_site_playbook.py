"""playbooks/site.yml end to end, as `make site` runs it: on the `demo-faults` profile (the demo cluster with one
broken node per layer) every healthy node passes and each broken one is named with its layer, in the printed table
and in the JSON report, and the play fails; once the faults are healed a re-run passes every node.

The module starts its own test bed (the session bed is the `ci` profile) and stops it afterwards.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kubernetes import client

from tests.integration.conftest import _from_state, run_cli

ROOT = Path(__file__).resolve().parents[3]
FAULTY = {"h100-noplugin-0": "device-plugin", "h100-xid-0": "gpu-health", "a100-noruntime-0": "toolkit"}
HEALTHY = ("h100-0", "h100-1", "a100-0")


@pytest.fixture(scope="module")
def site_bed(tmp_path_factory):
    state_dir = tmp_path_factory.mktemp("site-bed")
    proc = run_cli("up", "--profile", "demo-faults", "--state-dir", str(state_dir), timeout=900)
    if proc.returncode != 0:
        run_cli("down", "--state-dir", str(state_dir))
        pytest.fail(f"demo-faults test bed did not come up: {proc.stderr.strip()[-2000:]}")
    try:
        inventory = state_dir / "inventory.yml"
        inventory.write_text(run_cli("inventory", "--state-dir", str(state_dir)).stdout)
        yield _from_state(state_dir, owned=True), inventory, tmp_path_factory.mktemp("site-reports")
    finally:
        run_cli("down", "--state-dir", str(state_dir))


def run_site(inventory: Path, report_dir: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            str(Path(sys.executable).parent / "ansible-playbook"),
            "-i",
            str(inventory),
            str(ROOT / "playbooks" / "site.yml"),
            "-e",
            f"gpu_nvml_library={ROOT / 'build' / 'nvml' / 'libnvidia-ml.so.1'}",
            "-e",
            f"gpuops_report_dir={report_dir}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        env=os.environ.copy(),
    )


def operator_log_tail(bed, lines: int = 40) -> str:
    """The last lines of the simulated operator's log on this bed: the evidence when no node got its labels."""
    log = Path(bed.state_dir) / "logs" / "gpu-operator-sim.log"
    text = log.read_text(errors="replace") if log.is_file() else f"(no log at {log})"
    return "\n--- gpu-operator-sim.log ---\n" + "\n".join(text.splitlines()[-lines:])


def verdicts(report_dir: Path) -> dict:
    report = json.loads((report_dir / "gpu-validate.json").read_text())
    return {row["node"]: row for row in report["rows"]}


def test_site_names_each_broken_node_with_its_layer_and_passes_the_rest(site_bed):
    bed, inventory, report_dir = site_bed
    proc = run_site(inventory, report_dir)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-3000:]
    assert "3 passed, 3 failed" in out, out[-3000:] + operator_log_tail(bed)
    rows = verdicts(report_dir)
    for node, layer in FAULTY.items():
        assert rows[node]["verdict"] == "fail" and rows[node]["failing_layer"] == layer, rows[node]
        assert f"{node} at layer {layer}" in out
    for node in HEALTHY:
        assert rows[node]["verdict"] == "pass", rows[node]
    assert (report_dir / "baseline.json").is_file() and (report_dir / "gpu-validate.md").is_file()


def test_site_passes_every_node_once_the_faults_are_healed(site_bed):
    bed, inventory, report_dir = site_bed
    core = client.CoreV1Api(bed.api_client())
    for node in FAULTY:
        core.patch_node(node, {"metadata": {"annotations": {"sim.gpuops.io/fault": None}}})
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        alloc = {n: core.read_node(n).status.allocatable.get("nvidia.com/gpu") for n in FAULTY}
        if all(v == "8" for v in alloc.values()):
            break
        time.sleep(2)
    proc = run_site(inventory, report_dir)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:] + operator_log_tail(bed)
    assert "6 passed, 0 failed" in out
    assert {row["verdict"] for row in verdicts(report_dir).values()} == {"pass"}
