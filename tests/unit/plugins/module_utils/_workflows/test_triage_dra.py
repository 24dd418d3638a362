"""Specification of the DRA part of GPU triage (module_utils/_workflows/triage/dra.py, claims.py, claim_findings.py):
pods that use ResourceClaims and nodes that offer GPUs through DRA, from plain API dicts (no cluster)."""

from __future__ import annotations

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.triage.diagnose import (
    Snapshot,
    diagnose,
    wanted_pod,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.triage.sched import (
    parse_failed_scheduling,
)

DRIVER = "gpu.nvidia.com"
GPU_CLASS = {
    "metadata": {"name": "gpu.nvidia.com"},
    "spec": {"selectors": [{"cel": {"expression": "device.attributes['gpu.nvidia.com'].type == 'gpu'"}}]},
}
XID = {"key": "gpu.nvidia.com/xid", "value": "79", "effect": "NoSchedule"}
CANNOT = (
    "0/2 nodes are available: 2 cannot allocate all claims. still not schedulable, preemption: 0/2 nodes are "
    "available: 2 Preemption is not helpful for scheduling."
)


def dra_node(name):
    labels = {
        "kubernetes.io/hostname": name,
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.deploy.dra-driver": "true",
        "nvidia.com/gpu.deploy.dcgm-exporter": "true",
    }
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {},
        "status": {"capacity": {"cpu": "8"}, "conditions": [{"type": "Ready", "status": "True"}]},
    }


def plugin(node, crash=None):
    status = {"phase": "Running", "conditions": [{"type": "Ready", "status": "False" if crash else "True"}]}
    cs = {"name": "gpus", "ready": not crash, "restartCount": 0, "state": {"running": {}}}
    if crash:
        cs.update(
            restartCount=5,
            state={"waiting": {"reason": "CrashLoopBackOff"}},
            lastState={"terminated": {"reason": "Error", "exitCode": 1, "message": crash}},
        )
    status["containerStatuses"] = [cs]
    labels = {"app": "nvidia-dra-driver-kubelet-plugin"}
    return {
        "metadata": {"name": "nvidia-dra-driver-kubelet-plugin-" + node, "namespace": "gpu-operator", "labels": labels},
        "spec": {"nodeName": node},
        "status": status,
    }


def gpu(i, product="NVIDIA H100 80GB HBM3", taints=None):
    dev = {
        "name": "gpu-%d" % i,
        "attributes": {"type": {"string": "gpu"}, "productName": {"string": product}, "index": {"int": i}},
    }
    if taints:
        dev["taints"] = taints
    return dev


def rslice(node, devices, generation=1, count=1, name=None):
    pool = {"name": node, "generation": generation, "resourceSliceCount": count}
    return {
        "metadata": {"name": name or node + "-gpu.nvidia.com"},
        "spec": {"driver": DRIVER, "nodeName": node, "pool": pool, "devices": devices},
    }


def request(count=1, selector=None, admin=False, tolerations=None, mode=None, device_class="gpu.nvidia.com"):
    exactly = {"deviceClassName": device_class, "count": count}
    if selector:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    if admin:
        exactly["adminAccess"] = True
    if tolerations:
        exactly["tolerations"] = tolerations
    if mode:
        exactly = {k: v for k, v in exactly.items() if k != "count"}
        exactly["allocationMode"] = mode
    return {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}


def claim(name, spec=None, ns="ml", allocated_on=None, devices=(), reserved=(), deleting=False):
    body = {"metadata": {"name": name, "namespace": ns}, "spec": spec or request(), "status": {}}
    if deleting:
        body["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    if allocated_on:
        results = [{"request": "gpu", "driver": DRIVER, "pool": allocated_on, "device": d} for d in devices]
        selector = {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [allocated_on]}]}
            ]
        }
        body["status"]["allocation"] = {"devices": {"results": results}, "nodeSelector": selector}
        body["status"]["reservedFor"] = [{"resource": "pods", "name": p, "uid": p} for p in reserved]
    return body


def claim_pod(name="train", template=None, claim_name=None, generated=None, node=None, selector_node=None):
    entry = {"name": "gpu"}
    entry["resourceClaimTemplateName" if template else "resourceClaimName"] = template or claim_name
    spec = {
        "containers": [{"name": "c", "resources": {"claims": [{"name": "gpu"}]}}],
        "resourceClaims": [entry],
        "tolerations": [{"operator": "Exists"}],
    }
    if selector_node:
        spec["nodeSelector"] = {"kubernetes.io/hostname": selector_node}
    status = {"phase": "Pending"}
    if generated is not None:
        status["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": generated}]
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name, "namespace": "ml", "uid": "uid-" + name}, "spec": spec, "status": status}


def event(obj, reason, message):
    return {
        "metadata": {"name": obj + ".1", "namespace": "ml"},
        "involvedObject": {"kind": "Pod", "name": obj, "namespace": "ml", "uid": "uid-" + obj},
        "reason": reason,
        "message": message,
        "type": "Warning",
        "lastTimestamp": "2026-01-01T00:00:00Z",
    }


def triage(pod, nodes=("n0", "n1"), slices=None, claims=(), classes=(GPU_CLASS,), templates=(), events=(), **faults):
    names, crash, taints = list(nodes), faults.get("crash"), faults.get("taints") or {}
    slices = [rslice(n, [gpu(i) for i in range(2)]) for n in names] if slices is None else slices
    snap = Snapshot(
        nodes=[dict(dra_node(n), spec={"taints": taints.get(n, [])}) for n in names],
        operator_pods=[plugin(n, crash if n == names[0] else None) for n in names],
        targets=[pod] if pod else [],
        events=list(events),
        slices=slices,
        device_classes=list(classes),
        claims=list(claims),
        claim_templates=[{"metadata": {"name": t, "namespace": "ml"}} for t in templates],
        cluster_policies=None,
    )
    return diagnose(snap, {"kind": "pod", "namespace": "ml", "name": pod["metadata"]["name"] if pod else "gone"})


def finding(result, reason):
    return next(f for f in result["findings"] if f["reason"] == reason)


def errors(result):
    return [(f["layer"], f["reason"]) for f in result["findings"] if f["severity"] == "error"]


class TestClaimsThatDoNotExist:
    def test_a_template_that_does_not_exist_is_named_with_the_controllers_event(self):
        message = (
            'PodResourceClaim gpu: resource claim template "nope": resourceclaimtemplate.resource.k8s.io "nope" '
            "not found"
        )
        result = triage(claim_pod(template="nope"), events=[event("train", "FailedResourceClaimCreation", message)])
        assert errors(result) == [("dra", "ClaimTemplateNotFound")] and result["first_failing_layer"] == "dra"
        assert finding(result, "ClaimTemplateNotFound")["evidence"]["event"]["message"] == message
        assert "NoSchedulerEvent" not in [f["reason"] for f in result["findings"]]  # the scheduler never tries it

    def test_a_template_whose_claim_is_not_made_yet_points_at_the_controller(self):
        result = triage(claim_pod(template="one"), templates=["one"])
        assert errors(result) == [("dra", "ClaimNotCreated")]
        assert "resource-claim controller" in finding(result, "ClaimNotCreated")["fix"]

    def test_a_direct_claim_that_does_not_exist(self):
        result = triage(claim_pod(claim_name="shared"))
        assert errors(result) == [("dra", "ClaimNotFound")]
        assert "ml/shared, which does not exist" in finding(result, "ClaimNotFound")["message"]

    def test_a_claim_being_deleted(self):
        result = triage(claim_pod(claim_name="c"), claims=[claim("c", deleting=True)])
        assert errors(result) == [("dra", "ClaimBeingDeleted")]

    def test_a_template_that_asks_for_nothing_makes_no_claim_and_no_finding(self):
        result = triage(
            claim_pod(template="none", generated=None)
            | {"status": {"phase": "Pending", "resourceClaimStatuses": [{"name": "gpu"}]}}
        )
        assert not [f for f in result["findings"] if f["layer"] == "dra"]


class TestUnallocatedClaims:
    def pod_and_claim(self, spec=None, node=None):
        return claim_pod(template="t", generated="c", selector_node=node), claim("c", spec)

    def test_a_claim_that_fits_somewhere_is_no_error(self):
        pod, c = self.pod_and_claim()
        result = triage(pod, claims=[c], templates=["t"])
        assert errors(result) == [] and "FitsNow" in [f["reason"] for f in result["findings"]]
        assert result["pods"][0]["claims"] == [{"name": "gpu", "template": "t", "claim": "ml/c", "status": "pending"}]

    def test_a_missing_device_class_is_the_dra_layer(self):
        pod, c = self.pod_and_claim()
        msg = "0/2 nodes are available: request gpu: device class gpu.nvidia.com does not exist. no new claims to"
        result = triage(pod, claims=[c], classes=(), templates=["t"], events=[event("train", "FailedScheduling", msg)])
        assert errors(result) == [("dra", "DeviceClassMissing")]
        assert finding(result, "DeviceClassMissing")["evidence"]["scheduler_event"]["message"] == msg

    def test_no_device_satisfying_the_selectors_shows_what_is_offered(self):
        pod, c = self.pod_and_claim(
            request(selector="device.attributes['gpu.nvidia.com'].productName == 'NVIDIA B200'")
        )
        result = triage(pod, claims=[c], templates=["t"], events=[event("train", "FailedScheduling", CANNOT)])
        assert errors(result) == [("dra", "NoMatchingDevice")]
        found = finding(result, "NoMatchingDevice")
        assert found["nodes"] == ["n0", "n1"] and found["evidence"]["offered"]["n0"] == {"NVIDIA H100 80GB HBM3": 2}
        assert "SchedulerOther" not in [f["reason"] for f in result["findings"]]  # the DRA reason is understood

    def test_a_selector_we_cannot_evaluate_is_never_reported_as_no_match(self):
        pod, c = self.pod_and_claim(request(selector="device.attributes.exists(a, a == 'x')"))
        assert errors(triage(pod, claims=[c], templates=["t"])) == []

    def test_every_matching_device_allocated_names_the_claims_and_pods_holding_them(self):
        pod, c = self.pod_and_claim(node="n0")
        holder = claim("big", allocated_on="n0", devices=["gpu-0", "gpu-1"], reserved=["trainer"])
        result = triage(pod, claims=[c, holder], templates=["t"])
        # pinned by nodeSelector: n1 fails the selector, n0 has no free device
        assert errors(result) == [("dra", "DevicesAllocated"), ("scheduling", "NodeSelectorMismatch")]
        found = finding(result, "DevicesAllocated")
        assert "held by ml/big (pods ml/trainer)" in found["message"] and "needs 1, 0 free" in found["message"]
        assert found["evidence"]["holders"] == {"n0/gpu-0": ["ml/big"], "n0/gpu-1": ["ml/big"]}

    def test_more_devices_than_any_node_publishes_is_impossible_and_names_no_holder_to_wait_for(self):
        pod, c = self.pod_and_claim(request(count=16))
        holder = claim("big", allocated_on="n0", devices=["gpu-0"], reserved=["trainer"])
        result = triage(pod, claims=[c, holder], templates=["t"])
        assert errors(result) == [("dra", "ClaimLargerThanAnyNode")]
        found = finding(result, "ClaimLargerThanAnyNode")
        assert found["nodes"] == ["n0", "n1"] and "held by" not in found["message"]
        assert (
            "asks for 16 device(s) of class gpu.nvidia.com, and no node it could use publishes more than 2"
            in (found["message"])
        )
        assert found["fix"].startswith("Ask for at most 2 device(s) per request")

    def test_a_taint_on_a_node_without_enough_devices_for_the_claim_is_no_finding(self):
        pod, c = self.pod_and_claim(request(count=2))
        del pod["spec"]["tolerations"]
        holder = claim("big", allocated_on="n1", devices=["gpu-0", "gpu-1"], reserved=["trainer"])
        dedicated = {"key": "dedicated", "value": "infra", "effect": "NoSchedule"}
        slices = [rslice("n0", [gpu(0)]), rslice("n1", [gpu(0), gpu(1)])]
        result = triage(pod, slices=slices, claims=[c, holder], templates=["t"], taints={"n0": [dedicated]})
        # tolerating n0's taint would not help: it has one device and the claim asks for two
        assert errors(result) == [("dra", "DevicesAllocated")]

    def test_admin_access_gets_devices_other_claims_hold(self):
        pod, c = self.pod_and_claim(request(admin=True), node="n0")
        holder = claim("big", allocated_on="n0", devices=["gpu-0", "gpu-1"])
        assert errors(triage(pod, claims=[c, holder], templates=["t"])) == []

    def test_allocation_mode_all_needs_every_matching_device_free(self):
        pod, c = self.pod_and_claim(request(mode="All"), node="n0")
        holder = claim("one", allocated_on="n0", devices=["gpu-1"])
        assert ("dra", "DevicesAllocated") in errors(triage(pod, claims=[c, holder], templates=["t"]))

    def test_a_tainted_device_the_request_selects_is_the_dra_layer_unless_tolerated(self):
        only_gpu0 = "device.attributes['gpu.nvidia.com'].index == 0"
        slices = [rslice("n0", [gpu(0, taints=[XID]), gpu(1)])]
        pod, c = self.pod_and_claim(request(selector=only_gpu0), node="n0")
        result = triage(pod, nodes=["n0"], slices=slices, claims=[c], templates=["t"])
        assert ("dra", "DeviceTaintNotTolerated") in errors(result)
        refused = finding(result, "DeviceTaintNotTolerated")
        assert "n0/gpu-0 gpu.nvidia.com/xid=79:NoSchedule" in refused["message"]
        assert '[{key: gpu.nvidia.com/xid, operator: Equal, value: "79", effect: NoSchedule}]' in refused["fix"]
        tolerant = request(selector=only_gpu0, tolerations=[{"key": "gpu.nvidia.com/xid", "operator": "Exists"}])
        pod, c = self.pod_and_claim(tolerant, node="n0")
        assert errors(triage(pod, nodes=["n0"], slices=slices, claims=[c], templates=["t"])) == []

    def test_a_prioritized_list_fits_when_any_alternative_fits(self):
        spec = {
            "devices": {
                "requests": [
                    {
                        "name": "gpu",
                        "firstAvailable": [
                            {"name": "big", "deviceClassName": "gpu.nvidia.com", "count": 4},
                            {"name": "small", "deviceClassName": "gpu.nvidia.com", "count": 1},
                        ],
                    }
                ]
            }
        }
        pod, c = self.pod_and_claim(spec)
        assert errors(triage(pod, claims=[c], templates=["t"])) == []


class TestAllocatedClaims:
    def test_a_claim_allocated_on_another_node_than_the_pod_can_use(self):
        shared = claim("shared", allocated_on="n0", devices=["gpu-0"], reserved=["holder"])
        result = triage(claim_pod(claim_name="shared", selector_node="n1"), claims=[shared])
        found = finding(result, "ClaimAllocatedElsewhere")
        assert (found["layer"], found["severity"], found["nodes"]) == ("dra", "error", ["n0"])
        assert found["evidence"]["reserved_for"] == ["ml/holder"] and "can only go to n1" in found["message"]

    def test_a_claim_allocated_where_the_pod_can_go_is_fine(self):
        shared = claim("shared", allocated_on="n0", devices=["gpu-0"], reserved=["holder"])
        assert errors(triage(claim_pod(claim_name="shared"), claims=[shared])) == []

    def test_a_scheduled_pod_whose_claims_the_kubelet_cannot_prepare(self):
        msg = "Failed to prepare dynamic resources: prepare dynamic resources: DRA driver %s is not registered" % DRIVER
        c = claim("c", allocated_on="n0", devices=["gpu-0"], reserved=["train"])
        result = triage(
            claim_pod(template="t", generated="c", node="n0"),
            claims=[c],
            templates=["t"],
            events=[event("train", "FailedPrepareDynamicResources", msg)],
            crash="error initializing NVML: ERROR_DRIVER_NOT_LOADED",
        )
        assert errors(result) == [("dra", "DraPluginNotReady"), ("dra", "PrepareFailed")]
        failed = finding(result, "PrepareFailed")
        assert failed["evidence"]["event"]["message"] == msg
        assert failed["evidence"]["plugin_pod"]["waiting_reason"] == "CrashLoopBackOff"
        assert (
            "ERROR_DRIVER_NOT_LOADED" in finding(result, "DraPluginNotReady")["evidence"]["last_termination"]["message"]
        )


class TestNodesOfferingGpusThroughDra:
    def test_a_node_without_its_slice(self):
        pod = claim_pod(template="t", generated="c", selector_node="n0")
        result = triage(pod, slices=[rslice("n1", [gpu(0)])], claims=[claim("c")], templates=["t"])
        found = finding(result, "NoResourceSlice")
        assert (found["layer"], found["severity"], found["nodes"]) == ("dra", "error", ["n0"])
        assert result["first_failing_layer"] == "dra"

    def test_an_incomplete_pool_names_its_stale_slice(self):
        slices = [rslice("n0", [gpu(0)], generation=3, count=2), rslice("n0", [gpu(0)], generation=2, name="n0-stale")]
        pod = claim_pod(template="t", generated="c", selector_node="n0")
        result = triage(pod, nodes=["n0"], slices=slices, claims=[claim("c")], templates=["t"])
        assert finding(result, "PoolIncomplete")["severity"] == "error"
        stale = finding(result, "StaleSlices")
        assert stale["message"] == "pool n0 has slice(s) older than generation 3: n0-stale"
        assert "restart its kubelet plugin on node n0" in stale["fix"]

    def test_a_tainted_device_the_pod_does_not_need_is_not_its_finding(self):
        pod = claim_pod(template="t", generated="c", selector_node="n0")
        slices = [rslice("n0", [gpu(0, taints=[XID]), gpu(1)])]
        result = triage(pod, nodes=["n0"], slices=slices, claims=[claim("c")], templates=["t"])
        assert [f["reason"] for f in result["findings"] if f["layer"] == "dra"] == []
        assert errors(result) == []  # gpu-1 is free

    def test_a_tainted_device_fails_its_node_with_a_fix_that_names_the_real_taint(self):
        rma = {"key": "example.com/maintenance", "value": "rma", "effect": "NoExecute"}
        slices = [rslice("n0", [gpu(0, taints=[rma]), gpu(1)])]
        snap = Snapshot(nodes=[dra_node("n0")], operator_pods=[plugin("n0")], slices=slices, device_classes=[GPU_CLASS])
        result = diagnose(snap, {"kind": "node", "namespace": None, "name": "n0"})
        assert result["first_failing_layer"] == "dra"
        fix = finding(result, "DeviceTainted")["fix"]
        assert "The device taint example.com/maintenance=rma:NoExecute takes the device out of use" in fix
        assert '[{key: example.com/maintenance, operator: Equal, value: "rma", effect: NoExecute}]' in fix
        assert "xid" not in fix

    def test_a_dra_node_has_no_device_plugin_layer(self):
        result = triage(claim_pod(template="t", generated="c"), claims=[claim("c")], templates=["t"])
        assert not [f for f in result["findings"] if f["layer"] == "device-plugin"]
        assert {layer["name"]: layer["status"] for layer in result["layers"]}["dra"] == "ok"


class TestExtendedResourcePods:
    def gpu_pod(self):
        return {
            "metadata": {"name": "train", "namespace": "ml", "uid": "uid-train"},
            "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
            "status": {"phase": "Pending"},
        }

    def test_asking_for_nvidia_com_gpu_on_a_dra_only_cluster_is_told_to_use_a_claim(self):
        msg = "0/2 nodes are available: 2 Insufficient nvidia.com/gpu. no new claims to deallocate"
        result = triage(self.gpu_pod(), events=[event("train", "FailedScheduling", msg)])
        assert errors(result) == [("dra", "ExtendedResourceOnDRA")]
        assert "ResourceClaim with device class gpu.nvidia.com" in finding(result, "ExtendedResourceOnDRA")["fix"]

    def test_a_device_class_that_maps_the_extended_resource_serves_it(self):
        mapped = dict(GPU_CLASS, spec=dict(GPU_CLASS["spec"], extendedResourceName="nvidia.com/gpu"))
        result = triage(self.gpu_pod(), classes=(mapped,))
        assert "ExtendedResourceOnDRA" not in [f["reason"] for f in result["findings"]]

    def test_the_dra_layer_of_a_node_does_not_concern_a_pod_that_asks_for_the_extended_resource(self):
        node = dra_node("n0")  # labelled for the DRA driver but without a slice: a dra error on the node
        node["status"].update(capacity={"nvidia.com/gpu": "8"}, allocatable={"nvidia.com/gpu": "8"})
        snap = Snapshot(nodes=[node], targets=[self.gpu_pod()], slices=[], device_classes=[GPU_CLASS], claims=[])
        result = diagnose(snap, {"kind": "pod", "namespace": "ml", "name": "train"})
        assert not [f for f in result["findings"] if f["layer"] == "dra"] and errors(result) == []

    def test_namespace_triage_takes_pending_claim_pods(self):
        assert wanted_pod(claim_pod(template="t"))
        running = claim_pod(template="t", node="n0")
        running["status"]["phase"] = "Running"
        assert not wanted_pod(running)


def test_the_schedulers_dra_reasons_are_their_own_filter():
    parsed = parse_failed_scheduling(
        "0/5 nodes are available: 1 resourceclaim not available on the node, 4 node(s) didn't match Pod's node "
        "affinity/selector. still not schedulable, preemption: 0/5 nodes are available: 5 Preemption is not helpful."
    )
    assert [(r["count"], r["filter"]) for r in parsed["reasons"]] == [(1, "dra"), (4, "affinity")]
    assert [r["filter"] for r in parse_failed_scheduling(CANNOT)["reasons"]] == ["dra"]
