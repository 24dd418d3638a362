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
the driver does not tolerate; the DaemonSet stops counting that node, but the driver pod already there keeps running.
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
    """One message per driver DaemonSet whose pod count keeps NVIDIA's upgrade controller from building its state:
    the counts, the pods on nodes it no longer wants (with the taints it does not tolerate) and the fix as commands."""
    by_name = {name_of(n): n for n in nodes}
    out = []
    for ds in driver_daemonsets(daemonsets):
        owned = _owned(ds, pods)
        desired = int((ds.get("status") or {}).get("desiredNumberScheduled") or 0)
        if len(owned) == desired:
            continue
        unwanted = []
        for pod in owned:
            node = (pod.get("spec") or {}).get("nodeName")
            taints = _untolerated(ds, by_name.get(node) or {})
            if taints:
                unwanted.append((pod, node, taints))
        text = (
            "driver DaemonSet %s/%s owns %d pod(s) but wants %d: NVIDIA's upgrade controller builds no upgrade state "
            "while the two differ (\"driver DaemonSet should not have Unscheduled pods\") and moves no node"
            % (namespace_of(ds), name_of(ds), len(owned), desired)
        )
        if unwanted:
            text += "; it no longer wants %s. Fix: let the owner release the node, or delete the driver pod there " % (
                ", ".join("node %s (taint %s not tolerated)" % (node, ", ".join(t)) for _pod, node, t in unwanted)
            )
            text += "(the DaemonSet does not recreate it while the taint stands): %s" % "; ".join(
                "kubectl -n %s delete pod %s" % (namespace_of(pod), name_of(pod)) for pod, _node, _t in unwanted
            )
        else:
            text += "; wait until its pods are scheduled: kubectl -n %s get pods -l %s -o wide" % (
                namespace_of(ds),
                ",".join("%s=%s" % kv for kv in sorted((_template(ds).get("labels") or {}).items())) or "app",
            )
        out.append(text)
    return out
