# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""Whether the operator has rolled out: the ClusterPolicy's (or, in GPUCluster mode, the GPUCluster's) state and, per
node, the operands not ready yet.

A status counts only once the operator has observed the current spec: ``status.observedGeneration`` or, failing
that, the ``Ready`` condition's ``observedGeneration`` must equal ``metadata.generation``. The object can only carry
what its CRD carries (the API server prunes the rest), so this reads whichever field the installed CRD has. Where an
object carries neither, the ClusterPolicy-managed driver must run the spec's version: every driver pod outside the
nodes held back with ``nvidia.com/gpu-driver-upgrade.skip=true``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import (
    is_true,
    labels_of,
    meta_of,
    name_of,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.upgrade_status import (
    image_tag,
    nodes_in_flight,
    policy_status,
    running_release,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.cluster_view import (
    UPGRADE_SKIP_LABEL,
    ViewOptions,
    cluster_policy_in_use,
    cluster_view,
    operand_ok,
)


def observed_generation(obj):
    """``(generation the operator observed, where it says so)`` or ``(None, None)`` when ``obj`` carries neither."""
    status = obj.get("status") or {}
    if isinstance(status.get("observedGeneration"), int):
        return status["observedGeneration"], "status.observedGeneration"
    for cond in status.get("conditions") or []:
        if cond.get("type") == "Ready" and isinstance(cond.get("observedGeneration"), int):
            return cond["observedGeneration"], "the Ready condition's observedGeneration"
    return None, None


def old_driver_pods(policy, pods, nodes):
    """``[(node, tag)]`` of driver pods whose image is not the ClusterPolicy's ``spec.driver.version`` (nodes with the
    upgrade skip label left out); ``[]`` when the ClusterPolicy does not manage the driver."""
    driver = (policy.get("spec") or {}).get("driver") or {}
    version = driver.get("version")
    if driver.get("enabled") is False or driver.get("useNvidiaDriverCRD") or not version:
        return []
    held = {name_of(n) for n in nodes if is_true(labels_of(n).get(UPGRADE_SKIP_LABEL))}
    old = []
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if labels_of(pod).get("app.kubernetes.io/component") != "nvidia-driver" or node in held:
            continue
        if meta_of(pod).get("deletionTimestamp"):
            continue
        tag = image_tag(((pod.get("spec") or {}).get("containers") or [{}])[0].get("image"))
        if tag != version and not tag.startswith(version + "-"):
            old.append((node, tag))
    return sorted(old, key=lambda x: (x[0] or "", x[1]))


def stale_status(kind, obj, pods=(), nodes=()):
    """What is still old about ``obj`` (a sentence), or None once the operator has observed its spec."""
    generation = meta_of(obj).get("generation")
    observed, where = observed_generation(obj)
    if observed is not None:
        if generation is not None and observed < generation:
            return (
                "%s %s: the operator has observed generation %d (%s), the spec is at generation %d; its status is "
                "from before the change" % (kind, name_of(obj), observed, where, generation)
            )
        return None
    old = old_driver_pods(obj, pods, nodes) if kind == "ClusterPolicy" else []
    if old:
        version = obj["spec"]["driver"]["version"]
        return "%s %s carries no observedGeneration and the driver pods do not run %s yet: %s" % (
            kind,
            name_of(obj),
            version,
            ", ".join("%s (%s)" % (node, tag or "no tag") for node, tag in old),
        )
    return None


#: The custom resource that carries the operator's state: ``kind -> (group, version, plural)``.
STATE_RESOURCES = {
    "ClusterPolicy": ("nvidia.com", "v1", "clusterpolicies"),
    "GPUCluster": ("nvidia.com", "v1alpha1", "gpuclusters"),
}


def readiness(kube, namespace, kind="ClusterPolicy"):
    """The state and conditions of the operator's ``kind`` object (the ClusterPolicy, or the GPUCluster in GPUCluster
    mode), whether the operator observed its current spec (``stale``: what is still old) and, per node, the operands
    (in ``namespace``) that are not ready."""
    policies = kube.list_custom(*STATE_RESOURCES[kind]) or []
    drivers = kube.list_custom("nvidia.com", "v1alpha1", "nvidiadrivers")
    nodes = kube.list_core("nodes")
    pods = kube.list_core("pods", namespace=namespace)
    # a GPUCluster-mode node advertises no extended GPU resource: every node's operands count there
    lists = {"nodes": nodes, "pods": pods, "cluster_policies": policies, "nvidia_drivers": drivers}
    view = cluster_view(lists, ViewOptions(gpu_nodes_only=kind == "ClusterPolicy"))
    cp = view["cluster_policy"] or {}
    not_ready = {}
    for name, node in view["nodes"].items():
        bad = sorted(c for c, s in node["operands"].items() if not operand_ok(s))
        if bad:
            not_ready[name] = bad
    use_drivers = cp.get("driver", {}).get("use_nvidia_driver_crd")
    drivers_ready = all(d["ready"] for d in view["nvidia_drivers"]) if use_drivers else True
    policy = cluster_policy_in_use(policies)
    stale = [stale_status(kind, policy, pods, nodes)] if policy else []
    stale += [stale_status("NVIDIADriver", d) for d in drivers or []] if use_drivers else []
    stale = [s for s in stale if s]
    in_flight = nodes_in_flight(nodes)
    status = policy_status(dict(cp, kind=kind) if cp else None, running_release(policy, pods)[0], in_flight)
    if in_flight:
        stale.append(status["text"])
    return {
        "kind": kind,
        "ready": bool(cp.get("ready")) and drivers_ready and not stale,
        "release": status["release"],
        "status_meaning": status["meaning"],
        "upgrading": status["upgrading"],
        "state": cp.get("state"),
        "generation": cp.get("generation"),
        "observed_generation": observed_generation(policy)[0] if policy else None,
        "stale": stale,
        "conditions": cp.get("conditions") or [],
        "nvidia_drivers": [{"name": d["name"], "state": d["state"]} for d in view["nvidia_drivers"]],
        "not_ready_operands": not_ready,
        "unscheduled_operands": [s["name"] for s in view["unscheduled_operands"]],
    }


def wait_ready(kube, namespace, timeout, sleep, clock, kind="ClusterPolicy"):
    """Poll :func:`readiness` until ready or ``timeout`` seconds; return the last one (``waited_s`` added)."""
    start = clock()
    deadline = start + timeout
    while True:
        state = readiness(kube, namespace, kind)
        if state["ready"] or clock() >= deadline:
            state["waited_s"] = round(clock() - start, 1)
            return state
        sleep(min(5.0, max(0.5, deadline - clock())))


def not_ready_summary(ready):
    """One line of what is not ready: what is still old, failing conditions, operands per node, unscheduled ones."""
    parts = list(ready.get("stale") or [])
    for cond in ready["conditions"]:
        if (cond.get("status") == "True") is (cond.get("type") == "Error"):
            parts.append(
                "%s=%s (%s: %s)" % (cond.get("type"), cond.get("status"), cond.get("reason"), cond.get("message"))
            )
    for node, operands in sorted(ready["not_ready_operands"].items()):
        parts.append("%s: %s not ready" % (node, ", ".join(operands)))
    if ready["unscheduled_operands"]:
        parts.append("unscheduled: %s" % ", ".join(ready["unscheduled_operands"]))
    return "; ".join(parts) or "no conditions reported (is the operator running?)"
