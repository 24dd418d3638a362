"""DRA faults of the simulated driver (annotation sim.gpuops.io/fault on a node, or on the GPUCluster for the
DeviceClass), each seen the way a user sees it: the objects the driver publishes, the real scheduler's events, the
kubelet's events. Every fault is healed, and the bed healthy again, before the next spec (DraBed.fault).
"""

from tests.integration.helpers import wait_for
from tests.sim.operator import dra_devices as D

NODE = "h100-2"  # the fault node: the scheduling specs in test_dra.py use h100-0


def _cannot_allocate(msg):
    return msg.startswith("0/5 nodes are available: 1 cannot allocate all claims, 4 node(s) didn't match")


def test_a_node_without_its_slice_gets_no_pod_with_a_claim(dra):
    with dra.fault("dra-slice-missing", NODE), dra.namespace() as ns:
        wait_for(lambda: dra.slices(NODE) == [], 30, 0.2, what=f"no slice for {NODE}")
        dra.claim_template(ns, "one-gpu")
        dra.pod(ns, "pinned", "one-gpu", node=NODE)
        assert _cannot_allocate(dra.event(ns, "pinned", "FailedScheduling"))
        assert dra.plugin_pod(NODE).status.phase == "Running"  # the plugin runs; its slice is what is missing


def test_a_slice_with_fewer_devices_than_nvml_counts(dra):
    generation = dra.slices(NODE)[0]["spec"]["pool"]["generation"]
    with dra.fault("dra-fewer-devices", NODE):
        (slice_,) = wait_for(
            lambda: [s for s in dra.slices(NODE) if len(s["spec"]["devices"]) == 7], 30, 0.2, what="a 7-device slice"
        )
        assert len(dra.nvml_devices(NODE)) == 8
        assert [d["name"] for d in slice_["spec"]["devices"]] == [f"gpu-{i}" for i in range(7)]
        assert slice_["spec"]["pool"]["generation"] == generation + 1  # republished as a new pool generation


def test_a_tainted_device_is_not_allocated(dra):
    tainted = dra.uuid_of(NODE, "gpu-0")
    with dra.fault("dra-device-taint", NODE), dra.namespace() as ns:
        wait_for(lambda: dra.slices(NODE)[0]["spec"]["devices"][0].get("taints"), 30, 0.2, what="gpu-0 tainted")
        taint = dra.slices(NODE)[0]["spec"]["devices"][0]["taints"][0]
        assert (taint["key"], taint["value"], taint["effect"]) == ("gpu.nvidia.com/xid", "79", "NoSchedule")
        dra.claim_template(ns, "one-gpu")
        dra.pod(ns, "any", "one-gpu", node=NODE)
        dra.running(ns, "any")
        assert dra.allocation(ns, "any")[0]["device"] == "gpu-1"  # the first device, gpu-0, is skipped
        dra.claim_template(ns, "that-gpu", selector=dra.uuid_selector(tainted))
        dra.pod(ns, "that", "that-gpu", node=NODE)
        assert _cannot_allocate(dra.event(ns, "that", "FailedScheduling"))


def test_a_crash_looping_kubelet_plugin_leaves_allocated_pods_unprepared(dra):
    with dra.fault("dra-plugin-crashloop", NODE), dra.namespace() as ns:
        wait_for(lambda: _crash_looping(dra.plugin_pod(NODE)), 30, 0.2, what="the plugin pod in CrashLoopBackOff")
        status = wait_for(
            lambda: (st := dra.gpucluster_status()).get("state") == "notReady" and st, 30, 0.2, what="notReady"
        )
        ready = next(c for c in status["conditions"] if c["type"] == "Ready")
        assert ready["reason"] == "OperandNotReady" and "state-dra-driver" in ready["message"]
        dra.claim_template(ns, "one-gpu")
        dra.pod(ns, "stuck", "one-gpu", node=NODE)
        msg = dra.event(ns, "stuck", "FailedPrepareDynamicResources")
        assert msg == (
            "Failed to prepare dynamic resources: prepare dynamic resources: "
            "DRA driver gpu.nvidia.com is not registered"
        )
        pod = dra.core.read_namespaced_pod("stuck", ns)
        assert pod.spec.node_name == NODE and pod.status.phase == "Pending"
        assert pod.status.container_statuses[0].state.waiting.reason == "ContainerCreating"
        assert dra.allocation(ns, "stuck")  # scheduled and allocated: only the node side failed
    with dra.namespace() as ns:  # healed: the same pod now starts
        dra.claim_template(ns, "one-gpu")
        dra.pod(ns, "fine", "one-gpu", node=NODE)
        dra.running(ns, "fine")


def _crash_looping(pod):
    if pod is None or not pod.status.container_statuses:
        return False
    waiting = pod.status.container_statuses[0].state.waiting
    return waiting is not None and waiting.reason == "CrashLoopBackOff"


def test_a_pool_left_half_way_through_a_new_generation_allocates_nothing(dra):
    with dra.fault("dra-stale-generation", NODE), dra.namespace() as ns:
        current, stale = wait_for(lambda: len(s := dra.slices(NODE)) == 2 and s, 30, 0.2, what="two slices")
        assert stale["metadata"]["name"] == f"{NODE}-gpu.nvidia.com-stale"
        assert current["spec"]["pool"]["resourceSliceCount"] == 2  # announced, one never published
        assert stale["spec"]["pool"]["generation"] == current["spec"]["pool"]["generation"] - 1
        dra.claim_template(ns, "one-gpu")
        dra.pod(ns, "pinned", "one-gpu", node=NODE)
        assert _cannot_allocate(dra.event(ns, "pinned", "FailedScheduling"))


def test_without_the_gpu_device_class_no_claim_is_allocated(dra):
    with dra.fault("dra-deviceclass-missing"), dra.namespace() as ns:
        wait_for(lambda: D.DRIVER not in dra.device_classes(), 30, 0.2, what="DeviceClass gpu.nvidia.com gone")
        dra.claim_template(ns, "one-gpu")
        dra.pod(ns, "waiting", "one-gpu")
        msg = dra.event(ns, "waiting", "FailedScheduling")
        assert msg.startswith("0/5 nodes are available: request gpu: device class gpu.nvidia.com does not exist."), msg
