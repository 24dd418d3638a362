"""GPUCluster mode on the test bed: the simulated operator publishes the DRA driver's objects, and the REAL
kube-scheduler and kube-controller-manager (v1.36) create, allocate and reserve the claims; only the driver's node
side (its kubelet plugin preparing the claims) is simulated.

One ci-dra bed for every DRA spec (the `dra` fixture in conftest.py); the scheduling specs share a node made busy
by a pod holding all eight of its GPUs.
"""

import pytest
from kubernetes.client.rest import ApiException

from tests.integration.helpers import wait_for
from tests.sim.operator import dra_devices as D

BUSY = "h100-0"
PLUGIN_APP = "nvidia-dra-driver-kubelet-plugin"


@pytest.fixture(scope="module")
def busy(dra):
    """h100-0 with every GPU allocated to one pod (a claim for 8 devices pinned there)."""
    with dra.namespace() as ns:
        dra.claim_template(ns, "all-eight", count=8)
        dra.pod(ns, "hog", "all-eight", node=BUSY)
        dra.running(ns, "hog")
        yield BUSY


# --- what the operator deploys in GPUCluster mode ------------------------------------------------------------


def test_the_gpucluster_is_ready_and_no_cluster_policy_is_deployed(dra):
    status = dra.gpucluster_status()
    assert status["state"] == "ready" and status["namespace"] == "gpu-operator"
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("True", "Reconciled")
    assert dra.custom.list_cluster_custom_object("nvidia.com", "v1", "clusterpolicies")["items"] == []
    labels = dra.core.read_namespace("gpu-operator").metadata.labels
    assert labels["resource.kubernetes.io/admin-access"] == "true"  # the operator admits its own adminAccess claims


def test_gpu_nodes_advertise_no_nvidia_com_gpu(dra):
    for node in dra.core.list_node().items:
        assert "nvidia.com/gpu" not in (node.status.capacity or {}), node.metadata.name
        assert "nvidia.com/gpu" not in (node.status.allocatable or {}), node.metadata.name


def test_the_kubelet_plugin_runs_on_every_gpu_node_and_nowhere_else(dra):
    pods = dra.core.list_namespaced_pod("gpu-operator", label_selector=f"app={PLUGIN_APP}").items
    assert sorted(p.spec.node_name for p in pods) == sorted(dra.gpu_nodes)
    for p in pods:
        assert p.status.phase == "Running" and [c.name for c in p.spec.containers] == ["gpus"]
    for node in dra.gpu_nodes:
        assert dra.core.read_node(node).metadata.labels["nvidia.com/gpu.deploy.dra-driver"] == "true"


def test_device_classes_select_the_drivers_gpus_and_mig_devices(dra):
    classes = dra.device_classes()
    for name, typ in (("gpu.nvidia.com", "gpu"), ("mig.nvidia.com", "mig")):
        expr = classes[name]["spec"]["selectors"][0]["cel"]["expression"]
        assert expr == f"device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == '{typ}'"


def test_each_gpu_node_has_one_slice_listing_every_device_nvml_counts(dra):
    for node in dra.gpu_nodes:
        (slice_,) = dra.slices(node)
        spec = slice_["spec"]
        assert (spec["driver"], spec["nodeName"], spec["pool"]["name"]) == ("gpu.nvidia.com", node, node)
        assert spec["pool"]["generation"] >= 1 and spec["pool"]["resourceSliceCount"] == 1
        want = dra.nvml_devices(node)
        assert [d["name"] for d in spec["devices"]] == [d["name"] for d in want]
        for got, nvml in zip(spec["devices"], want):
            for attr in ("type", "uuid", "driverVersion", "productName", "resource.kubernetes.io/pciBusID"):
                assert got["attributes"][attr] == nvml["attributes"][attr], (node, got["name"], attr)
    fixture = D.load_fixture("a100-mig-8")
    mig_slice = dra.slices("a100-0")[0]["spec"]["devices"]
    assert len(mig_slice) == D.nvml_device_count(fixture) == 44
    assert sum(d["attributes"]["type"]["string"] == "mig" for d in mig_slice) == 42


# --- the real scheduler allocating claims ----------------------------------------------------------------------


def test_a_one_gpu_claim_is_allocated_on_a_node_with_a_free_device(dra, busy):
    with dra.namespace() as ns:
        dra.claim_template(ns, "one-gpu")
        dra.pod(ns, "train", "one-gpu")
        pod = dra.running(ns, "train")
        assert pod.spec.node_name != busy
        (result,) = dra.allocation(ns, "train")
        assert (result["driver"], result["pool"], result["request"]) == ("gpu.nvidia.com", pod.spec.node_name, "gpu")
        assert result["device"] in [d["name"] for d in dra.slices(pod.spec.node_name)[0]["spec"]["devices"]]
        claim = dra.claim_of(ns, "train")
        assert [r["name"] for r in claim["status"]["reservedFor"]] == ["train"]
        ready_to_start = next(c for c in pod.status.conditions if c.type == "PodReadyToStartContainers")
        assert ready_to_start.status == "True"  # set by the simulated plugin once it prepared the claim


def test_a_claim_for_a_device_already_allocated_stays_pending_with_the_schedulers_event(dra, busy):
    taken = dra.uuid_of(busy, "gpu-0")
    with dra.namespace() as ns:
        dra.claim_template(ns, "that-gpu", selector=dra.uuid_selector(taken))
        dra.pod(ns, "second", "that-gpu", node=busy)
        msg = dra.event(ns, "second", "FailedScheduling")
        assert msg.startswith("0/5 nodes are available: 1 cannot allocate all claims, 4 node(s) didn't match"), msg
        assert dra.core.read_namespaced_pod("second", ns).status.phase == "Pending"
        assert dra.allocation(ns, "second") == []


def test_an_admin_access_claim_is_allocated_on_a_busy_node(dra, busy):
    with dra.namespace(admin_access=True) as ns:
        dra.claim_template(ns, "inspect", admin=True)
        dra.pod(ns, "nvidia-smi", "inspect", node=busy)
        dra.running(ns, "nvidia-smi")
        (result,) = dra.allocation(ns, "nvidia-smi")
        assert result["adminAccess"] is True and result["pool"] == busy


def test_admin_access_needs_the_namespace_label(dra):
    with dra.namespace() as ns, pytest.raises(ApiException) as exc:
        dra.claim_template(ns, "inspect", admin=True)
    assert exc.value.status == 422 and "resource.kubernetes.io/admin-access" in exc.value.body


def test_a_mig_claim_gets_a_mig_device_of_the_mig_node(dra):
    with dra.namespace() as ns:
        dra.claim_template(ns, "one-mig", device_class="mig.nvidia.com")
        dra.pod(ns, "small", "one-mig")
        assert dra.running(ns, "small").spec.node_name == "a100-0"
        (result,) = dra.allocation(ns, "small")
        assert result["device"].startswith("gpu-0-mig-")


def test_a_cluster_policy_beside_the_gpucluster_is_a_prerequisite_not_met(dra):
    body = {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "cluster-policy"}, "spec": {}}
    labels_before = {n: dict(dra.core.read_node(n).metadata.labels) for n in dra.gpu_nodes}

    def prerequisite_not_met():
        status = dra.gpucluster_status()
        return status if any(c["reason"] == "PrerequisiteNotMet" for c in status.get("conditions") or []) else None

    dra.custom.create_cluster_custom_object("nvidia.com", "v1", "clusterpolicies", body)
    try:
        status = wait_for(prerequisite_not_met, 30, 0.2, what="GPUCluster PrerequisiteNotMet")
        assert status["state"] == "notReady"
        ready = next(c for c in status["conditions"] if c["type"] == "Ready")
        assert ready["status"] == "False"
        assert ready["message"] == (
            'A ClusterPolicy CR "cluster-policy" exists; a ClusterPolicy CR and GPUCluster CR may not exist at the '
            "same time"
        )
    finally:
        dra.custom.delete_cluster_custom_object("nvidia.com", "v1", "clusterpolicies", "cluster-policy")
        wait_for(lambda: _undo_cluster_policy(dra, labels_before), 30, 0.5, what="nodes without the policy's traces")
    wait_for(lambda: dra.gpucluster_status().get("state") == "ready", 30, 0.2, what="GPUCluster ready again")


def _undo_cluster_policy(dra, labels_before) -> bool:
    """Take back what the (simulated) ClusterPolicy path wrote on the GPU nodes meanwhile: its labels and the
    nvidia.com/gpu capacity. True once a pass found nothing left to take back."""
    if dra.custom.list_cluster_custom_object("nvidia.com", "v1", "clusterpolicies")["items"]:
        return False
    clean = True
    for node, before in labels_before.items():
        now = dra.core.read_node(node)
        extra = {k: None for k in now.metadata.labels or {} if k not in before}
        if extra:
            dra.core.patch_node(node, {"metadata": {"labels": extra}})
        res = {k: None for k in now.status.capacity or {} if k.startswith("nvidia.com/")}
        if res:
            dra.core.patch_node_status(node, {"status": {"capacity": res, "allocatable": res}})
        clean = clean and not extra and not res
    return clean
