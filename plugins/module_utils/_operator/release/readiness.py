# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""Whether the operator has rolled out: the ClusterPolicy's state and, per node, the operands not ready yet."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.cluster_view import cluster_view, operand_ok


def readiness(kube, namespace):
    """The ClusterPolicy's state and conditions and, per node, the operands (in ``namespace``) that are not ready."""
    policies = kube.list_custom("nvidia.com", "v1", "clusterpolicies") or []
    drivers = kube.list_custom("nvidia.com", "v1alpha1", "nvidiadrivers")
    nodes = kube.list_core("nodes")
    pods = kube.list_core("pods", namespace=namespace)
    view = cluster_view(nodes, pods, policies, drivers)
    cp = view["cluster_policy"] or {}
    not_ready = {}
    for name, node in view["nodes"].items():
        bad = sorted(c for c, s in node["operands"].items() if not operand_ok(s))
        if bad:
            not_ready[name] = bad
    drivers_ready = (
        all(d["ready"] for d in view["nvidia_drivers"]) if cp.get("driver", {}).get("use_nvidia_driver_crd") else True
    )
    return {
        "ready": bool(cp.get("ready")) and drivers_ready,
        "state": cp.get("state"),
        "conditions": cp.get("conditions") or [],
        "nvidia_drivers": [{"name": d["name"], "state": d["state"]} for d in view["nvidia_drivers"]],
        "not_ready_operands": not_ready,
        "unscheduled_operands": [s["name"] for s in view["unscheduled_operands"]],
    }


def wait_ready(kube, namespace, timeout, sleep, clock):
    """Poll :func:`readiness` until ready or ``timeout`` seconds; return the last one (``waited_s`` added)."""
    start = clock()
    deadline = start + timeout
    while True:
        state = readiness(kube, namespace)
        if state["ready"] or clock() >= deadline:
            state["waited_s"] = round(clock() - start, 1)
            return state
        sleep(min(5.0, max(0.5, deadline - clock())))


def not_ready_summary(ready):
    """One line of what is not ready: failing conditions, operands per node, unscheduled operands."""
    parts = []
    for cond in ready["conditions"]:
        if cond.get("status") != "True" or cond.get("type") == "Error":
            parts.append(
                "%s=%s (%s: %s)" % (cond.get("type"), cond.get("status"), cond.get("reason"), cond.get("message"))
            )
    for node, operands in sorted(ready["not_ready_operands"].items()):
        parts.append("%s: %s not ready" % (node, ", ".join(operands)))
    if ready["unscheduled_operands"]:
        parts.append("unscheduled: %s" % ", ".join(ready["unscheduled_operands"]))
    return "; ".join(parts) or "no conditions reported (is the operator running?)"
