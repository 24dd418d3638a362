"""gpu_validate on the ci-dra bed (GPUs reached through DRA only): the tests' site play (NVML facts on every GPU host,
then the role) as the least-privilege identity; each node in DRA mode is checked for its kubelet plugin, its
ResourceSlices, its devices against NVML and device taints, and its smoke pod gets its GPU through a claim the real
kube-scheduler allocates. Every DRA fault of the simulated driver is named at layer dra with its evidence."""

from __future__ import annotations

import pytest

from tests.integration.dra.dra_faults import NODE_FAULTS, device_class_missing
from tests.integration.validate.validate_helpers import Validate

DRA_CHECKS = ("dra-plugin", "dra-slices", "dra-devices", "dra-taints")


@pytest.fixture(scope="module")
def validate(dra, tmp_path_factory):
    dra.wait_healthy(timeout=120)
    return Validate(dra.bed, tmp_path_factory.mktemp("dra-validate"))


def evidence(row):
    return " | ".join(f["evidence"] for f in row["findings"] if f["layer"] == "dra")


def test_every_dra_node_passes_with_its_smoke_pod_through_a_claim(dra, validate):
    rc, report, out = validate.run()
    assert rc == 0, out[-3000:]
    rows = Validate.rows(report)
    assert sorted(rows) == sorted(dra.gpu_nodes)
    for node, row in rows.items():
        assert (row["verdict"], row["mode"], row["smoke"]["status"]) == ("pass", "dra", "passed"), (node, row)
        assert [row["checks"][c] for c in DRA_CHECKS] == ["pass"] * 4 and row["checks"]["allocatable"] == "skipped"
    assert rows["a100-0"]["dra_devices"] == 44
    assert "Run a GPU smoke pod through a claim on every DRA node - 4 pod(s)" in out
    # GPUCluster mode runs no GPU Feature Discovery: the product comes from the node's DRA devices
    assert all(row["product"] and row["product"].startswith("NVIDIA ") for row in rows.values()), rows
    # the operator's mode is named: a GPUCluster, not a missing ClusterPolicy
    assert ", GPUCluster gpu-cluster (NVIDIADrivers: " in out, out[-3000:]
    assert (report["policy_status"]["kind"], report["policy_status"]["name"]) == ("GPUCluster", "gpu-cluster")
    md = (validate.workdir / ("run-%d" % validate.runs) / "gpu-validate.md").read_text()
    assert "Operator: GPUCluster gpu-cluster is " in md and "ClusterPolicy" not in md


def test_every_node_fault_is_named_at_layer_dra_in_one_run(node_fault_runs):
    rc, report, out = node_fault_runs["validate"]
    assert rc != 0 and "4 GPU node(s) failed validation" in out
    rows = Validate.rows(report)
    assert Validate.layers(report) == dict.fromkeys(NODE_FAULTS, "dra")
    assert rows["h100-0"]["checks"]["dra-slices"] == "fail"
    assert "no ResourceSlice of driver gpu.nvidia.com for node h100-0" in evidence(rows["h100-0"])
    h100_1 = evidence(rows["h100-1"])
    assert "DRA kubelet plugin pod" in h100_1 and "CrashLoopBackOff" in h100_1
    assert "the node's ResourceSlices publish 7 GPU(s), NVML counts 8; not published: GPU-" in h100_1
    assert [rows["h100-1"]["checks"][c] for c in ("dra-plugin", "dra-devices")] == ["fail", "fail"]
    assert "are tainted, and only claims that tolerate the taint get them: gpu-0 gpu.nvidia.com/xid=79:NoSchedule" in (
        evidence(rows["h100-2"])
    )
    assert rows["h100-2"]["checks"]["dra-taints"] == "fail"
    assert "pool a100-0 is incomplete: generation" in evidence(rows["a100-0"])
    assert "a100-0-gpu.nvidia.com-stale" in evidence(rows["a100-0"])


def test_a_missing_device_class_fails_every_dra_node_at_layer_dra(dra, validate):
    with device_class_missing(dra):
        rc, report, out = validate.run(gpu_validate_smoke_test=False)
    assert rc != 0
    rows = Validate.rows(report)
    for node, row in rows.items():
        assert row["failing_layer"] == "dra", (node, row)
        assert evidence(row) == "DeviceClass gpu.nvidia.com does not exist: claims for it stay Pending"
