# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""What the planned change disrupts, per planned node, before anything moves: whether the operator's upgrade
controller restarts the node's driver in place (26.7.0 and later, the driver config digest unchanged) or takes the
full flow that evicts the GPU workloads, which GPU pods are evicted and which pods of ``nvidia.com/gpu.deploy.client``
DaemonSets go with the driver restart; and the policy that refuses a plan evicting too many workloads."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import (
    key_of,
    labels_of,
    meta_of,
    name_of,
    namespace_of,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.driver_digest import (
    CLIENT_LABEL,
    DIGEST_ENV,
    IN_PLACE_SINCE,
    digest_changes,
    pod_digest,
    restarts_in_place,
    selects_client_label,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.pods import (
    active_gpu_pods,
    parse_selector,
    selector_matches,
)

IN_PLACE = "in-place"
FULL = "full"
NONE = "none"


def _owner(pod):
    """The name of the DaemonSet that owns ``pod``, or None."""
    refs = meta_of(pod).get("ownerReferences") or []
    return next((r.get("name") for r in refs if r.get("kind") == "DaemonSet"), None)


def _live(pod):
    return not meta_of(pod).get("deletionTimestamp") and (pod.get("status") or {}).get("phase") not in (
        "Succeeded",
        "Failed",
    )


def _driver_pods(pods, namespace):
    """``{node: driver pod}`` of the operator's running driver pods."""
    return {
        (p.get("spec") or {}).get("nodeName"): p
        for p in pods
        if namespace_of(p) == namespace
        and labels_of(p).get("app.kubernetes.io/component") == "nvidia-driver"
        and _live(p)
    }


def planned_digest_change(cp, target, source, values):
    """Why the planned change alters the driver config digest (a sentence), or None when it leaves it as it is."""
    driver = target.get("driver_version")
    if driver and driver != source.get("driver_version"):
        return "the driver version changes (%s -> %s) and the driver image feeds the digest" % (
            source.get("driver_version"),
            driver,
        )
    changed = digest_changes(values, (cp or {}).get("spec"))
    if changed:
        return "the chart values change %s, which feed the digest" % ", ".join(changed)
    chart = target.get("chart_version")
    pinned = (((values or {}).get("driver") or {}).get("manager") or {}).get("version")
    if chart and chart != source.get("chart_version") and not pinned:
        return (
            "chart %s may bring another driver-manager image, which feeds the digest (set driver.manager.version in "
            "the chart values to keep the one running)" % chart
        )
    return None


def _route(driver_pod, daemonsets, release, change):
    """``(restart, why)`` of one node's driver pod: ``in-place`` or ``full``."""
    if not restarts_in_place(release):
        return FULL, "operator %s has no in-place driver restart (from %s on)" % (release or "unknown", IN_PLACE_SINCE)
    running = pod_digest(driver_pod.get("spec"))
    if not running:
        return FULL, "the running driver pod carries no %s (set from operator %s on)" % (DIGEST_ENV, IN_PLACE_SINCE)
    ds = daemonsets.get(_owner(driver_pod)) or {}
    desired = pod_digest(((ds.get("spec") or {}).get("template") or {}).get("spec"))
    if running != desired:
        return FULL, "the running driver pod's %s differs from its DaemonSet's" % DIGEST_ENV
    if change:
        return FULL, change
    return IN_PLACE, "the driver config digest stays %s: cordon and driver pod restart, no eviction" % running


def _client_pods(pods, node):
    return sorted(
        key_of(p)
        for p in pods
        if (p.get("spec") or {}).get("nodeName") == node and _live(p) and _owner(p) and selects_client_label(p["spec"])
    )


def predict(planned, cluster, target, source, options, namespace):
    """The disruption of each planned node from what the plan read (a :class:`.gate.Cluster`), the ``chart_values``,
    ``eviction`` (the wave's policy: ``evict``, ``wait``, ``none``) and ``wait_for_completion_selector`` of
    ``options`` (a :class:`.CanaryOptions`), and the driver pods in the operator's ``namespace``.

    A node without an operator driver pod keeps its driver (``none``); the wave's own eviction policy still applies
    there. A ``full`` restart evicts the GPU pods (the wave's eviction, else the controller's pod deletion) but
    those waited for; an ``in-place`` one evicts none. Pods of DaemonSets selecting ``nvidia.com/gpu.deploy.client``
    go with every driver restart on operator releases that have the label."""
    release = target.get("chart_version") or source.get("chart_version")
    pods = cluster.pods
    change = planned_digest_change(cluster.cp, target, source, options.chart_values)
    drivers = _driver_pods(pods, namespace)
    by_name = {name_of(ds): ds for ds in cluster.daemonsets}
    eviction = options.eviction or "evict"
    terms = parse_selector(options.wait_for_completion_selector)
    nodes = []
    for node in sorted(planned):
        driver = drivers.get(node)
        if driver is None:
            restart, why = NONE, "no driver pod of the operator: the driver stays as it is"
        else:
            restart, why = _route(driver, by_name, release, change)
        evicts = restart == FULL or (restart == NONE and eviction == "evict")
        gpu = [p for p in active_gpu_pods(pods, {node}) if not (terms and selector_matches(labels_of(p), terms))]
        nodes.append(
            {
                "node": node,
                "driver_restart": restart,
                "reason": why,
                "evicted": sorted(key_of(p) for p in gpu) if evicts and eviction != "wait" else [],
                "clients": _client_pods(pods, node) if restart != NONE and restarts_in_place(release) else [],
            }
        )
    return {
        "release": release,
        "in_place": [n["node"] for n in nodes if n["driver_restart"] == IN_PLACE],
        "full": [n["node"] for n in nodes if n["driver_restart"] == FULL],
        "evicted_workloads": sum(len(n["evicted"]) for n in nodes),
        "client_label": CLIENT_LABEL,
        "nodes": nodes,
    }


def eviction_limit_failure(disruption, limit):
    """The gate's failure when the plan evicts more GPU workload pods than ``limit`` (None: no limit), else None."""
    count = disruption["evicted_workloads"]
    if limit is None or count <= limit:
        return None
    where = "; ".join(
        "%s (%s): %s" % (n["node"], n["reason"], ", ".join(n["evicted"])) for n in disruption["nodes"] if n["evicted"]
    )
    return (
        "the plan evicts %d GPU workload pod(s), more than max_evicted_workloads=%d: %s. Move or "
        "finish those workloads first, exclude their nodes, plan a change that restarts the driver in place (operator "
        "%s or later, no change to what feeds the driver config digest), or raise max_evicted_workloads "
        "(gpu_canary_upgrade_max_evicted_workloads with the role)" % (count, limit, where, IN_PLACE_SINCE)
    )
