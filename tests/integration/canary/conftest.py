"""Fixtures for the canary-upgrade tests: their own test bed (profile canary, 20 GPU nodes in two pools, the
simulated operator) with the stand-in chart v26.3.3 installed, started for this module and stopped after it.

Set GPUOPS_CANARY_TESTBED_STATE=<state dir> to reuse a canary bed that is already up (left running).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from canary_helpers import NS, CanaryBed, collection_root, wait_for

from tests.integration.conftest import _from_state, run_cli

INITIAL_CHART = "v26.3.3"


@pytest.fixture(scope="module")
def canary(tmp_path_factory):
    reuse = os.environ.get("GPUOPS_CANARY_TESTBED_STATE")
    state_dir = Path(reuse) if reuse else tmp_path_factory.mktemp("canary-bed")
    if not reuse:
        proc = run_cli("up", "--profile", "canary", "--state-dir", str(state_dir), timeout=900)
        if proc.returncode != 0:
            run_cli("down", "--state-dir", str(state_dir))
            pytest.fail(f"canary test bed did not come up (rc {proc.returncode}): {proc.stderr.strip()[-2000:]}")
    try:
        bed = _from_state(state_dir, owned=not reuse)
        work = tmp_path_factory.mktemp("canary")
        collection_root(work)
        inv = run_cli("inventory", "--state-dir", str(state_dir))
        assert inv.returncode == 0, inv.stderr
        (work / "inventory.yml").write_text(inv.stdout)
        cb = CanaryBed(bed, work)
        env = {
            **os.environ,
            "HELM_CACHE_HOME": str(work / "helm-cache"),
            "HELM_CONFIG_HOME": str(work / "helm-config"),
            "HELM_DATA_HOME": str(work / "helm-data"),
        }
        have = subprocess.run(
            [bed.helm, "status", "gpu-operator", "-n", NS, "--kubeconfig", bed.kubeconfig],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        if have.returncode != 0:
            r = subprocess.run(
                [
                    bed.helm,
                    "upgrade",
                    "--install",
                    "gpu-operator",
                    "gpu-operator",
                    "--repo",
                    bed.chart_repo_url,
                    "--version",
                    INITIAL_CHART,
                    "-n",
                    NS,
                    "--create-namespace",
                    # the operands roll out on every node at once (the chart's default is one node at a time): each
                    # spec's preparation and the reset after it roll the operands of 20 nodes out and back
                    "--set",
                    "daemonsets.rollingUpdate.maxUnavailable=100%",
                    "--wait",
                    "--timeout",
                    "600s",
                    "--kubeconfig",
                    bed.kubeconfig,
                ],
                capture_output=True,
                text=True,
                env=env,
                timeout=660,
                check=False,
            )
            assert r.returncode == 0, r.stderr[-2000:]
        wait_for(lambda: (cb.cp().get("status") or {}).get("state") == "ready", 240, 1, what="ClusterPolicy ready")
        cb.reset()
        yield cb
    finally:
        if not reuse:
            run_cli("down", "--state-dir", str(state_dir))


@pytest.fixture
def clean(canary):
    """A bed with no canary leftovers before (and after) the test."""
    canary.reset()
    yield canary
    canary.reset()
