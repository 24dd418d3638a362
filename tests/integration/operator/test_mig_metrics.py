"""MIG manager (mig.config → mig.config.state, MIG resources) and DCGM metrics through a real Prometheus."""

from __future__ import annotations

import pathlib
import time

import pytest

from tests.integration.simop_helpers import wait_for
from tests.sim.operator import prometheus


def _mig_node(op):
    for n in sorted(op.gpu_nodes):
        if op.node(n).metadata.labels.get("nvidia.com/mig.capable") == "true":
            return n
    pytest.skip("profile has no MIG-capable GPU node")


def test_mig_single_strategy_reconfigures(gpu_operator):
    op = gpu_operator
    op.wait_healthy()
    n = _mig_node(op)
    count = op.gpu_nodes[n].count
    assert op.node(n).metadata.labels["nvidia.com/mig.config"] == "all-disabled"
    op.label(n, **{"nvidia.com/mig.config": "all-1g.10gb"})
    try:
        wait_for(
            lambda: op.node(n).metadata.labels.get("nvidia.com/mig.config.state") == "pending",
            10,
            interval=0.05,
            what="pending",
        )
        wait_for(lambda: op.node(n).metadata.labels.get("nvidia.com/mig.config.state") == "success", 20, what="success")
        wait_for(lambda: op.alloc(n) == str(7 * count), 15, what="7 MIG slices per GPU as nvidia.com/gpu")
        wait_for(
            lambda: op.node(n).metadata.labels["nvidia.com/gpu.product"].endswith("-MIG-1g.10gb"),
            10,
            what="GFD product label with the MIG suffix",
        )
    finally:
        op.label(n, **{"nvidia.com/mig.config": "all-disabled"})
    wait_for(lambda: op.alloc(n) == str(count), 20, what="full GPUs back")


def test_mig_mixed_strategy_and_failure(gpu_operator):
    op = gpu_operator
    op.wait_healthy()
    n = _mig_node(op)
    count = op.gpu_nodes[n].count
    op.patch_cp({"mig": {"strategy": "mixed"}})
    try:
        op.label(n, **{"nvidia.com/mig.config": "all-3g.40gb"})
        wait_for(lambda: op.alloc(n, "nvidia.com/mig-3g.40gb") == str(2 * count), 20, what="mig-3g.40gb")
        assert op.alloc(n) == "0"
        op.fault(n, "mig-failed")
        op.label(n, **{"nvidia.com/mig.config": "all-1g.10gb"})
        wait_for(lambda: op.node(n).metadata.labels.get("nvidia.com/mig.config.state") == "failed", 20, what="failed")
    finally:
        op.fault(n, None)
        op.label(n, **{"nvidia.com/mig.config": "all-disabled"})
        op.patch_cp({"mig": {"strategy": "single"}})
    wait_for(
        lambda: (
            op.node(n).metadata.labels.get("nvidia.com/mig.config.state") == "success"
            and op.alloc(n) == str(count)
            and op.alloc(n, "nvidia.com/mig-3g.40gb") is None
        ),
        30,
        what="reset",
    )


def test_prometheus_has_a_dcgm_series_per_gpu(gpu_operator, tmp_path):
    op = gpu_operator
    op.wait_healthy()
    try:
        prometheus.find_binary()
    except RuntimeError as exc:
        pytest.fail(f"{exc} (`make integration` installs it)")
    url = pathlib.Path(op.state_dir, "dcgm-exporter.url").read_text().strip()
    prom = prometheus.start(tmp_path / "prom", [prometheus.target_from_url(url)])
    try:
        want = {(n, i) for n, g in op.gpu_nodes.items() for i in range(g.count)}

        def series():
            res = prom.query("DCGM_FI_DEV_GPU_UTIL")
            return {(r["metric"]["Hostname"], int(r["metric"]["gpu"])) for r in res} if res else None

        got = wait_for(lambda: (series() or set()) >= want and series(), 30, interval=0.5, what="DCGM series")
        assert got == want
        for metric in (
            "DCGM_FI_DEV_GPU_TEMP",
            "DCGM_FI_DEV_FB_USED",
            "DCGM_FI_DEV_XID_ERRORS",
            "DCGM_FI_DEV_POWER_USAGE",
        ):
            assert len(prom.query(metric)) == len(want), metric
        uuids = {r["metric"]["UUID"] for r in prom.query("DCGM_FI_DEV_GPU_UTIL")}
        assert len(uuids) == len(want)
    finally:
        prom.stop()
    time.sleep(0.1)
