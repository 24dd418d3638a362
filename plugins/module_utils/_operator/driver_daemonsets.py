# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""Whether NVIDIA's upgrade controller can build its upgrade state at all (pure).

k8s-operator-libs ``pkg/upgrade`` builds no state - and so moves no node of the whole cluster - while a driver
DaemonSet owns another number of pods than its ``status.desiredNumberScheduled`` ("driver DaemonSet should not have
Unscheduled pods"). The classic cause is a quarantine: a remediation system taints a node with a ``NoSchedule`` taint
the driver does not tolerate. The driver pod already there keeps running, and the next time the DaemonSet controller
counts - at the latest when the canary's preparation changes the driver's pod template - it no longer wants that node.
The count in the DaemonSet's status is no guide before then (it is recomputed only when the DaemonSet syncs), so the
node's taints against the pod template's tolerations are.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import (
    meta_of,
    name_of,
    namespace_of,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.values import tolerated

DRIVER_COMPONENT = ("app.kubernetes.io/component", "nvidia-driver")
#: Taint effects that keep a DaemonSet from wanting a node (PreferNoSchedule does not).
BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")
#: Taints the DaemonSet controller tolerates for every DaemonSet pod by itself (the cordon's, the node conditions').
DAEMONSET_TOLERATED = frozenset(
    "node.kubernetes.io/" + k
    for k in ("unschedulable", "not-ready", "unreachable", "disk-pressure", "memory-pressure", "pid-pressure")
)


def _template(ds):
    return ((ds.get("spec") or {}).get("template") or {}).get("metadata") or {}


def driver_daemonsets(daemonsets):
    """The driver DaemonSets among ``daemonsets`` (their pod template carries the driver's component label)."""
    key, value = DRIVER_COMPONENT
    return [ds for ds in daemonsets if ((_template(ds).get("labels") or {}).get(key)) == value]


def _owned(ds, pods):
    uid = meta_of(ds).get("uid")
    return [
        p
        for p in pods
        if namespace_of(p) == namespace_of(ds)
        and any(r.get("kind") == "DaemonSet" and r.get("uid") == uid for r in meta_of(p).get("ownerReferences") or [])
    ]


def _untolerated(ds, node):
    """The node's taints that keep the DaemonSet from wanting it (``key[=value]:effect``)."""
    tolerations = ((ds.get("spec") or {}).get("template") or {}).get("spec", {}).get("tolerations") or []
    return [
        "%s%s:%s" % (t.get("key"), "=%s" % t["value"] if t.get("value") else "", t.get("effect"))
        for t in (node.get("spec") or {}).get("taints") or []
        if t.get("effect") in BLOCKING_EFFECTS
        and t.get("key") not in DAEMONSET_TOLERATED
        and not tolerated(tolerations, t)
    ]


def state_refusals(daemonsets, pods, nodes):
    """One message per driver DaemonSet that runs pods on nodes it does not want (their ``NoSchedule``/``NoExecute``
    taints not tolerated by its pod template): once it counts again, NVIDIA's upgrade controller builds no upgrade
    state. Each names the pods, nodes and taints and the fix as commands."""
    by_name = {name_of(n): n for n in nodes}
    out = []
    for ds in driver_daemonsets(daemonsets):
        owned = _owned(ds, pods)
        unwanted = []
        for pod in owned:
            node = (pod.get("spec") or {}).get("nodeName")
            taints = _untolerated(ds, by_name.get(node) or {})
            if taints:
                unwanted.append((pod, node, taints))
        if not unwanted:
            continue
        out.append(
            "driver DaemonSet %s/%s runs a pod on %s, which it does not want: once it counts again - when the "
            "preparation changes its pod template at the latest - it wants %d pod(s) but owns %d, and NVIDIA's upgrade "
            "controller builds no upgrade state while the two differ (\"driver DaemonSet should not have Unscheduled "
            "pods\"), so no node would move. Fix: let the owner release the node, or delete the driver pod there (the "
            "DaemonSet does not recreate it while the taint stands): %s"
            % (
                namespace_of(ds),
                name_of(ds),
                ", ".join("node %s (taint %s not tolerated)" % (node, ", ".join(t)) for _pod, node, t in unwanted),
                len(owned) - len(unwanted),
                len(owned),
                "; ".join(
                    "kubectl -n %s delete pod %s" % (namespace_of(pod), name_of(pod)) for pod, _n, _t in unwanted
                ),
            )
        )
    return out
