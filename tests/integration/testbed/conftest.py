"""The DRA bed for test_dra*.py: a test bed of its own on profile ci-dra (the simulated operator in GPUCluster mode)
with the stand-in chart v26.7.1 installed as the GPUCluster `gpu-cluster`. One bed for every DRA spec of the session;
it is stopped right after the last spec that uses it (a session fixture alone would keep it idling, about 750 MB and
4 % of a core, through the rest of the suite). GPUOPS_DRA_TESTBED_STATE=<state dir> reuses a running ci-dra bed and
leaves it up.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.integration.conftest import _from_state, run_cli
from tests.integration.testbed.dra_helpers import CHART, GPUCLUSTER_MODE, NS, DraBed

_STARTED: list[Path] = []  # the state dir of the DRA bed this session started, until it is stopped


def _stop_dra_bed() -> None:
    while _STARTED:
        run_cli("down", "--state-dir", str(_STARTED.pop()))


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    """After the last spec that uses the DRA bed (module fixtures are torn down by now), stop the bed."""
    if "dra" not in item.fixturenames:
        return
    later = item.session.items[item.session.items.index(item) + 1 :]
    if not any("dra" in i.fixturenames for i in later):
        _stop_dra_bed()


@pytest.fixture(scope="session")
def dra(tmp_path_factory) -> DraBed:
    reuse = os.environ.get("GPUOPS_DRA_TESTBED_STATE")
    state_dir = Path(reuse) if reuse else tmp_path_factory.mktemp("dra-bed")
    if not reuse:
        t0 = time.monotonic()
        _STARTED.append(state_dir)
        proc = run_cli("up", "--profile", "ci-dra", "--state-dir", str(state_dir), timeout=900)
        if proc.returncode != 0:
            _stop_dra_bed()
            pytest.fail(f"DRA test bed did not come up (rc {proc.returncode}): {proc.stderr.strip()[-2000:]}")
        sys.stderr.write(f"\n[testbed] profile ci-dra up in {time.monotonic() - t0:.1f}s ({state_dir})\n")
    try:
        bed = _from_state(state_dir, owned=not reuse)
        work = tmp_path_factory.mktemp("dra-helm")
        env = {**os.environ, **{f"HELM_{k}_HOME": str(work / k.lower()) for k in ("CACHE", "CONFIG", "DATA")}}
        sets = [x for s in GPUCLUSTER_MODE for x in ("--set", s)]
        argv = [bed.helm, "upgrade", "--install", "gpu-operator", "gpu-operator", "--repo", bed.chart_repo_url]
        argv += ["--version", CHART, "-n", NS, "--create-namespace", "--wait", "--timeout", "300s", *sets]
        r = subprocess.run(
            [*argv, "--kubeconfig", bed.kubeconfig], capture_output=True, text=True, env=env, timeout=360
        )
        assert r.returncode == 0, r.stderr[-2000:]
        dra_bed = DraBed(bed)
        dra_bed.wait_healthy(timeout=120)
        yield dra_bed
    finally:
        _stop_dra_bed()
