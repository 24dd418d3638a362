# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""What a wave does with the pods on its nodes: GPU workloads evicted (through the Eviction API, so
PodDisruptionBudgets hold) or waited for before the nodes are released, and, after the upgrade, operand pods whose
images differ from their ``OnDelete`` DaemonSet's renewed."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from functools import partial
from urllib.parse import quote

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.k8s import K8sError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import (
    key_of,
    labels_of,
    meta_of,
    name_of,
    namespace_of,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.errors import CanaryAbort
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.pods import (
    active_gpu_pods,
    parse_selector,
    selector_matches,
)


def evict(session, pod):
    """POST an Eviction for ``pod``; False when a PodDisruptionBudget refuses it (HTTP 429)."""
    ns, name = namespace_of(pod), name_of(pod)
    path = "/api/v1/namespaces/%s/pods/%s/eviction" % (quote(ns, safe=""), quote(name, safe=""))
    body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": ns}}
    change = "evict pod %s/%s from node %s" % (ns, name, (pod.get("spec") or {}).get("nodeName"))
    try:
        session.act(change, partial(session.client.send, "POST", path, body=body, what=change, accept_statuses=(404,)))
    except K8sError as exc:
        if exc.status == 429:
            return False
        raise
    return True


def handle_workloads(session, wave, policy, wait_selector, timeout):
    """Wait for the waitForCompletion pods, then evict (``evict``), wait for (``wait``) or leave (``none``) the
    other GPU pods of the wave's nodes; returns the evicted pods. CanaryAbort when some are still there after
    ``timeout`` seconds."""
    members = set(wave["nodes"])
    terms = parse_selector(wait_selector)
    deadline = session.clock() + timeout
    evicted = []

    def check():
        pods = active_gpu_pods(session.all_pods(), members)
        if policy == "wait":
            waiting, others = pods, []
        else:
            waiting = [p for p in pods if terms and selector_matches(labels_of(p), terms)]
            others = [p for p in pods if p not in waiting]
        blocked = []
        if policy == "evict":
            for pod in others:
                ref = key_of(pod)
                if not evict(session, pod):
                    blocked.append(ref)
                elif ref not in evicted:
                    evicted.append(ref)
        still = [key_of(p) for p in waiting] + blocked
        return not still, still

    if policy == "none" and not terms:
        return evicted
    if session.check_mode:
        check()  # records the evictions it would make
        return evicted
    done, still = session.wait(deadline, check)
    if not done:
        raise CanaryAbort(
            "GPU workloads on %s did not finish or could not be evicted within %ds: %s (a PodDisruptionBudget "
            "allows no disruption, or a waitForCompletion job is still running); raise eviction_timeout or "
            "move them" % (wave["name"], timeout, ", ".join(still)),
            wave=wave["index"],
        )
    return evicted


def _renewable(daemonset):
    """``(pod selector, template images)`` of an ``OnDelete`` operand DaemonSet (not the driver's: the upgrade
    controller renews it), else None."""
    spec = daemonset.get("spec") or {}
    tmpl = spec.get("template") or {}
    match = (spec.get("selector") or {}).get("matchLabels") or {}
    if (spec.get("updateStrategy") or {}).get("type") != "OnDelete" or not match:
        return None
    if labels_of(tmpl).get("app.kubernetes.io/component") == "nvidia-driver":
        return None
    return match, [c.get("image") for c in (tmpl.get("spec") or {}).get("containers") or []]


def roll_operands(session, members):
    """Delete the operand pods on ``members`` whose images differ from their ``OnDelete`` DaemonSet's template
    (the driver excepted); the DaemonSet controller recreates them. Returns the renewed pods."""
    members = set(members)
    pods = None
    renewed = []
    for match, want in filter(None, map(_renewable, session.daemonsets())):
        if pods is None:
            pods = session.operator_pods()
        for pod in pods:
            node = (pod.get("spec") or {}).get("nodeName")
            if node not in members or meta_of(pod).get("deletionTimestamp"):
                continue
            if any(labels_of(pod).get(k) != v for k, v in match.items()):
                continue
            have = [c.get("image") for c in (pod.get("spec") or {}).get("containers") or []]
            if have == want:
                continue
            name = name_of(pod)
            change = "renew operand pod %s/%s on node %s (%s)" % (
                session.ns,
                name,
                node,
                ", ".join(w for w in want if w not in have) or "new template",
            )
            session.act(change, partial(session.client.delete_pod, session.ns, name))
            renewed.append("%s/%s" % (session.ns, name))
    return renewed
