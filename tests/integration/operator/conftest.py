"""Fixtures for the simulated GPU Operator tests: the stand-in chart installed on the session test bed.

If the test bed does not already run tests.sim.operator (profile `operator: none`), the module fixture starts
one against the admin kubeconfig and stops it afterwards. Nodes missing the sim.gpuops.io/gpu-* annotations
(older test beds) get them from the profile first.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.sim import profiles
from tests.sim import testbed as tb

REPO_ROOT = Path(__file__).resolve().parents[3]

from simop_helpers import NS, Op, wait_for  # noqa: E402,F401


def _annotate_from_profile(core, prof):
    for pool in prof.gpu_pools():
        want = {
            "sim.gpuops.io/gpu-product": pool.gpu.product,
            "sim.gpuops.io/gpu-count": str(pool.gpu.count),
            "sim.gpuops.io/gpu-memory": str(pool.gpu.memory_mib),
        }
        for n in pool.node_names():
            ann = core.read_node(n).metadata.annotations or {}
            missing = {k: v for k, v in want.items() if k not in ann}
            if "sim.gpuops.io/mig-capable" not in ann:
                missing["sim.gpuops.io/mig-capable"] = (
                    "true" if "A100" in pool.gpu.product or "H100" in pool.gpu.product else "false"
                )
            if missing:
                core.patch_node(n, {"metadata": {"annotations": missing}})


@pytest.fixture(scope="module")
def gpu_operator(testbed, tmp_path_factory):
    from kubernetes import client

    api = testbed.api_client()
    core = client.CoreV1Api(api)
    st = tb.State(testbed.state_dir).load()
    prof = profiles.load(st.data.get("profile_source") or testbed.profile)
    _annotate_from_profile(core, prof)
    work = tmp_path_factory.mktemp("simop")
    proc = None
    running = any(n == "gpu-operator-sim" and ok for n, _c, ok in st.check())
    state_dir = Path(testbed.state_dir)
    if not running:
        state_dir = work
        log = open(work / "gpu-operator-sim.log", "ab")  # noqa: SIM115 (handed to the child process)
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.sim.operator", "--kubeconfig", testbed.kubeconfig, "--state-dir", str(work)],
            cwd=REPO_ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            wait_for((work / "dcgm-exporter.url").exists, 30, what="simulated operator start")
        except AssertionError:
            proc.kill()
            raise
    helm_env = {
        **os.environ,
        "HELM_CACHE_HOME": str(work / "helm-cache"),
        "HELM_CONFIG_HOME": str(work / "helm-config"),
        "HELM_DATA_HOME": str(work / "helm-data"),
    }
    op = Op(testbed, api, prof, helm_env, state_dir)
    try:
        op.helm("uninstall", "gpu-operator", "-n", NS, "--wait", check=False)  # clean slate
        op.install()
        yield op
    finally:
        for n in op.gpu_nodes:
            try:
                core.patch_node(n, {"metadata": {"annotations": {"sim.gpuops.io/fault": None}}})
            except Exception:
                pass
        op.helm("uninstall", "gpu-operator", "-n", NS, "--wait", check=False)
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
