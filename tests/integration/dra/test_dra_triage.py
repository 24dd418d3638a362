"""gpu_triage_info on the ci-dra bed, as the least-privilege identity: Pending pods that use DRA claims, each kept
from its GPU by one cause that the real kube-controller-manager, kube-scheduler or (simulated) kubelet reports in its
own words, and triage naming that cause at the dra layer - what the DRA machinery lacks and what the request cannot
get from it - with the scheduler's message as evidence and a fix."""

from __future__ import annotations

import pytest

from tests.integration.dra.dra_faults import device_class_missing, node_faults
from tests.integration.helpers import wait_for
from tests.integration.testbed.dra_helpers import RESOURCE

HOSTNAME = "kubernetes.io/hostname"
ONE_GPU = {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 1}}]}}


def claim_pod(dra, ns, name, template=None, claim=None, node=None, limits=None):
    """A pod as a user writes it: a claim from ``template`` (or the claim ``claim``), or ``limits`` (no claim)."""
    container = {"name": "cuda", "image": "registry.invalid/cuda:12"}
    spec = {"containers": [container], "tolerations": [{"operator": "Exists"}], "terminationGracePeriodSeconds": 0}
    if limits:
        container["resources"] = {"limits": limits}
    else:
        source = {"resourceClaimTemplateName": template} if template else {"resourceClaimName": claim}
        spec["resourceClaims"] = [{"name": "gpu", **source}]
        container["resources"] = {"claims": [{"name": "gpu"}]}
    if node:
        spec["nodeSelector"] = {HOSTNAME: node}
    dra.core.create_namespaced_pod(ns, {"metadata": {"name": name}, "spec": spec})


def by_pod(result):
    """``{pod name: {reason: finding}}`` of a namespace triage."""
    return {p["name"]: {f["reason"]: f for f in p["findings"]} for p in result["pods"]}


def layer_of(result, pod):
    return next(p["first_failing_layer"] for p in result["pods"] if p["name"] == pod)


# ------------------------------------------------------------------------------------------------
# A healthy DRA stack: what the pods themselves ask for


@pytest.fixture(scope="module")
def healthy(dra, run):
    """One namespace with a pod per cause, triaged at once (namespace triage), then cleaned up."""
    with dra.namespace() as ns:
        dra.custom.create_namespaced_custom_object(
            *RESOURCE, ns, "resourceclaims", {"metadata": {"name": "shared"}, "spec": ONE_GPU}
        )
        dra.claim_template(ns, "one-gpu")
        dra.claim_template(ns, "all-gpus", count=8)
        dra.claim_template(ns, "sixteen-gpus", count=16)
        dra.claim_template(ns, "b200", selector="device.attributes['gpu.nvidia.com'].productName == 'NVIDIA B200'")
        claim_pod(dra, ns, "holder", claim="shared", node="h100-0")
        claim_pod(dra, ns, "filler", template="all-gpus", node="h100-2")
        dra.running(ns, "holder")
        dra.running(ns, "filler")
        claim_pod(dra, ns, "elsewhere", claim="shared", node="h100-1")
        claim_pod(dra, ns, "busy", template="one-gpu", node="h100-2")
        claim_pod(dra, ns, "nomatch", template="b200")
        claim_pod(dra, ns, "huge", template="sixteen-gpus")
        claim_pod(dra, ns, "notemplate", template="nope")
        claim_pod(dra, ns, "noclaim", claim="missing")
        claim_pod(dra, ns, "extended", limits={"nvidia.com/gpu": "1"})
        events = {
            "elsewhere": dra.event(ns, "elsewhere", "FailedScheduling"),
            "busy": dra.event(ns, "busy", "FailedScheduling"),
            "nomatch": dra.event(ns, "nomatch", "FailedScheduling"),
            "huge": dra.event(ns, "huge", "FailedScheduling"),
            "extended": dra.event(ns, "extended", "FailedScheduling"),
            "notemplate": dra.event(ns, "notemplate", "FailedResourceClaimCreation"),
        }
        namespace = run("gpu_triage_info", namespace=ns)
        one_pod = run("gpu_triage_info", pod="%s/extended" % ns)
        holders = {p: dra.claim_of(ns, p)["metadata"]["name"] for p in ("filler",)}
        dra.core.delete_namespaced_pod("holder", ns, grace_period_seconds=0)
        wait_for(lambda: not dra.core.list_namespaced_pod(ns, field_selector="metadata.name=holder").items, 30, 0.2)
        dra.custom.delete_namespaced_custom_object(*RESOURCE, ns, "resourceclaims", "shared")
    return {"ns": ns, "result": namespace, "pod": one_pod, "events": events, "holders": holders}


def test_namespace_triage_takes_every_pending_claim_pod_and_not_the_running_ones(healthy):
    result = healthy["result"]
    assert not result.get("failed"), result.get("msg")
    assert {p["name"] for p in result["pods"]} == {
        "elsewhere",
        "busy",
        "nomatch",
        "huge",
        "notemplate",
        "noclaim",
        "extended",
    }
    claims = next(p["claims"] for p in result["pods"] if p["name"] == "busy")
    assert [(c["name"], c["template"], c["status"]) for c in claims] == [("gpu", "one-gpu", "pending")]
    assert result["changed"] is False


def test_a_missing_claim_template_is_named_with_the_controllers_event(healthy):
    found = by_pod(healthy["result"])["notemplate"]["ClaimTemplateNotFound"]
    assert found["layer"] == "dra" and found["severity"] == "error"
    assert found["evidence"]["event"]["message"] == healthy["events"]["notemplate"]
    assert 'resourceclaimtemplate.resource.k8s.io "nope" not found' in found["evidence"]["event"]["message"]
    assert "Create the ResourceClaimTemplate nope" in found["fix"]
    assert layer_of(healthy["result"], "notemplate") == "dra"
    assert "NoSchedulerEvent" not in by_pod(healthy["result"])["notemplate"]  # the scheduler never tries such a pod


def test_a_missing_claim_is_named(healthy):
    found = by_pod(healthy["result"])["noclaim"]["ClaimNotFound"]
    assert found["layer"] == "dra" and "%s/missing, which does not exist" % healthy["ns"] in found["message"]


def test_a_claim_allocated_on_another_node_names_that_node(healthy):
    assert "1 resourceclaim not available on the node" in healthy["events"]["elsewhere"]
    found = by_pod(healthy["result"])["elsewhere"]["ClaimAllocatedElsewhere"]
    assert (found["layer"], found["nodes"]) == ("dra", ["h100-0"])
    assert found["evidence"]["reserved_for"] == ["%s/holder" % healthy["ns"]]
    assert "can only go to h100-1" in found["message"]
    pod = next(p for p in healthy["result"]["pods"] if p["name"] == "elsewhere")
    assert {r["filter"] for r in pod["scheduler_event"]["reasons"]} == {"dra", "affinity"}


def test_no_device_satisfying_the_selectors_shows_what_the_nodes_offer(healthy):
    assert "cannot allocate all claims" in healthy["events"]["nomatch"]
    found = by_pod(healthy["result"])["nomatch"]["NoMatchingDevice"]
    assert found["layer"] == "dra" and "NVIDIA B200" in found["message"]
    assert found["evidence"]["offered"]["h100-0"] == {"NVIDIA H100 80GB HBM3": 8}
    assert found["evidence"]["offered"]["a100-0"]["NVIDIA A100-SXM4-80GB 1g.10gb"] >= 1


def test_a_claim_for_more_devices_than_any_node_has_is_impossible_not_a_wait(healthy):
    assert "cannot allocate all claims" in healthy["events"]["huge"]
    findings = by_pod(healthy["result"])["huge"]
    found = findings["ClaimLargerThanAnyNode"]
    assert (found["layer"], found["severity"]) == ("dra", "error") and "DevicesAllocated" not in findings
    assert (
        "asks for 16 device(s) of class gpu.nvidia.com, and no node it could use publishes more than 8"
        in (found["message"])
    )
    assert "held by" not in found["message"] and "Ask for at most 8 device(s) per request" in found["fix"]
    assert layer_of(healthy["result"], "huge") == "dra"


def test_every_matching_device_allocated_names_the_claims_holding_them(healthy):
    assert "cannot allocate all claims" in healthy["events"]["busy"]
    found = by_pod(healthy["result"])["busy"]["DevicesAllocated"]
    ns = healthy["ns"]
    assert (found["layer"], found["nodes"]) == ("dra", ["h100-2"])
    assert "%s/%s" % (ns, healthy["holders"]["filler"]) in found["message"] and "%s/filler" % ns in found["message"]
    assert set(found["evidence"]["holders"]) == {"h100-2/gpu-%d" % i for i in range(8)}


def test_a_pod_asking_for_nvidia_com_gpu_on_a_dra_only_cluster_is_told_to_use_a_claim(healthy):
    assert "Insufficient nvidia.com/gpu" in healthy["events"]["extended"]
    result = healthy["pod"]
    reasons = {f["reason"]: f for f in result["findings"]}
    found = reasons["ExtendedResourceOnDRA"]
    assert found["layer"] == "dra" and result["first_failing_layer"] == "dra"
    assert "ResourceClaim with device class gpu.nvidia.com" in found["fix"]
    assert not {"InsufficientGPU", "MIGResourceName"} & set(reasons)
    assert not [f for f in result["findings"] if f["layer"] == "device-plugin"]  # DRA nodes run no device plugin


# ------------------------------------------------------------------------------------------------
# A broken DRA stack

#: One node-level fault per GPU node (the crash-looping plugin alone on h100-1: its pods get allocated there).
NODE_FAULTS = {
    "h100-0": "dra-slice-missing",
    "h100-1": "dra-plugin-crashloop",
    "h100-2": "dra-device-taint",
    "a100-0": "dra-stale-generation",
}


def test_a_missing_device_class_is_named_at_the_dra_layer(dra, run):
    with device_class_missing(dra), dra.namespace() as ns:
        dra.claim_template(ns, "one-gpu")
        claim_pod(dra, ns, "waiting", template="one-gpu")
        event = dra.event(ns, "waiting", "FailedScheduling")
        result = run("gpu_triage_info", pod="%s/waiting" % ns)
    assert "request gpu: device class gpu.nvidia.com does not exist" in event
    found = {f["reason"]: f for f in result["findings"]}["DeviceClassMissing"]
    assert found["layer"] == "dra" and result["first_failing_layer"] == "dra"
    assert found["evidence"]["scheduler_event"]["message"] == event
    assert "re-creates it" in found["fix"]


@pytest.fixture(scope="module")
def faulty(dra, run):
    """Every node-level DRA fault on (dra_faults.NODE_FAULTS), a pod pinned to each faulty node, one namespace
    triage and a node triage, then healed."""
    tainted = dra.uuid_selector(dra.uuid_of("h100-2", "gpu-0"))
    with node_faults(dra, NODE_FAULTS), dra.namespace() as ns:
        dra.claim_template(ns, "one-gpu")
        dra.claim_template(ns, "that-gpu", selector=tainted)
        for pod, template, node in (
            ("on-missing-slice", "one-gpu", "h100-0"),
            ("on-crashing-plugin", "one-gpu", "h100-1"),
            ("on-tainted-gpu", "that-gpu", "h100-2"),
            ("on-stale-pool", "one-gpu", "a100-0"),
        ):
            claim_pod(dra, ns, pod, template=template, node=node)
        events = {
            "on-crashing-plugin": dra.event(ns, "on-crashing-plugin", "FailedPrepareDynamicResources"),
            **{
                p: dra.event(ns, p, "FailedScheduling") for p in ("on-missing-slice", "on-tainted-gpu", "on-stale-pool")
            },
        }
        return {
            "result": run("gpu_triage_info", namespace=ns),
            "node": run("gpu_triage_info", node="h100-1"),
            "events": events,
        }


def test_a_node_without_its_slice_is_named_at_the_dra_layer(faulty):
    assert "cannot allocate all claims" in faulty["events"]["on-missing-slice"]
    found = by_pod(faulty["result"])["on-missing-slice"]["NoResourceSlice"]
    assert (found["layer"], found["nodes"]) == ("dra", ["h100-0"])
    assert layer_of(faulty["result"], "on-missing-slice") == "dra"


def test_a_crash_looping_plugin_fails_the_prepare_step_after_scheduling(faulty):
    assert "DRA driver gpu.nvidia.com is not registered" in faulty["events"]["on-crashing-plugin"]
    findings = by_pod(faulty["result"])["on-crashing-plugin"]
    failed = findings["PrepareFailed"]
    assert failed["layer"] == "dra" and failed["evidence"]["event"]["message"] == faulty["events"]["on-crashing-plugin"]
    assert failed["evidence"]["plugin_pod"]["waiting_reason"] == "CrashLoopBackOff"
    plugin = findings["DraPluginNotReady"]
    assert "ERROR_DRIVER_NOT_LOADED" in plugin["evidence"]["last_termination"]["message"]
    pod = next(p for p in faulty["result"]["pods"] if p["name"] == "on-crashing-plugin")
    assert pod["node"] == "h100-1" and pod["claims"][0]["status"] == "allocated"


def test_a_node_triage_names_the_crash_looping_plugin_and_not_the_device_plugin(faulty):
    result = faulty["node"]
    assert result["first_failing_layer"] == "dra"
    assert "DraPluginNotReady" in {f["reason"] for f in result["findings"]}
    assert not [f for f in result["findings"] if f["layer"] == "device-plugin"]
    layers = {layer["name"]: layer["status"] for layer in result["layers"]}
    assert layers["dra"] == "failed" and result["nodes"]["h100-1"]["mode"] == "dra"


def test_a_tainted_device_that_the_claim_selects_is_named_with_its_taint(faulty):
    found = by_pod(faulty["result"])["on-tainted-gpu"]["DeviceTaintNotTolerated"]
    assert (found["layer"], found["nodes"]) == ("dra", ["h100-2"])
    assert "h100-2/gpu-0 gpu.nvidia.com/xid=79:NoSchedule" in found["message"]
    assert '[{key: gpu.nvidia.com/xid, operator: Equal, value: "79", effect: NoSchedule}]' in found["fix"]


def test_a_stale_generation_leaves_the_pool_incomplete(faulty):
    findings = by_pod(faulty["result"])["on-stale-pool"]
    found = findings["PoolIncomplete"]
    assert (found["layer"], found["nodes"]) == ("dra", ["a100-0"])
    assert "a100-0-gpu.nvidia.com-stale" in findings["StaleSlices"]["message"]
