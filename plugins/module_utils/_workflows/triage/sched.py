# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""Scheduling facts for GPU triage, from raw Kubernetes JSON: pure functions, no I/O.

* what a pod asks for (:func:`pod_requests`), and what is already requested on each node (:func:`node_requested`);
* the default scheduler's first failing filter per node, in the scheduler's own filter order
  (NodeUnschedulable, TaintToleration, NodeAffinity, NodeResourcesFit) (:func:`first_failing_filter`);
* the kube-scheduler's ``FailedScheduling`` message parsed per reason (:func:`parse_failed_scheduling`), the DRA
  reasons (``cannot allocate all claims``, ``resourceclaim not available on the node``) as filter ``dra``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import (
    labels_of,
    meta_of,
    name_of,
    to_int,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.cluster_view import (
    GPU_RESOURCE,
    MIG_RESOURCE_PREFIX,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.triage.common import last_seen

UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
TERMINAL_PHASES = ("Succeeded", "Failed")

#: Our filter names, in the order the default kube-scheduler runs them (it stops at a node's first failure).
FILTER_ORDER = ("unschedulable", "taint", "affinity", "resources")

_AVAILABLE_RE = re.compile(r"^\s*0/(\d+) nodes are available:\s*(.*)$", re.S)
_SEGMENT_RE = re.compile(r"^\s*(\d+)\s+(.*?)\s*$", re.S)
_TAINT_RE = re.compile(r"untolerated taint\(?s?\)?\s*\{([^:}]*):\s*([^}]*)\}")


def is_gpu_resource(name):
    """True for ``nvidia.com/gpu`` and the ``nvidia.com/mig-*`` resources."""
    return name == GPU_RESOURCE or str(name).startswith(MIG_RESOURCE_PREFIX)


def container_gpu_requests(container):
    """GPU/MIG requests of one container; extended resources default their request to the limit."""
    res = container.get("resources") or {}
    out = {}
    for source in (res.get("limits") or {}, res.get("requests") or {}):
        for key, value in source.items():
            if is_gpu_resource(key):
                out[key] = to_int(value)
    return out


def pod_requests(pod):
    """The pod's effective GPU/MIG requests, as the scheduler counts them: max(sum of containers, any init)."""
    spec = pod.get("spec") or {}
    total = {}
    for container in spec.get("containers") or []:
        for key, value in container_gpu_requests(container).items():
            total[key] = total.get(key, 0) + value
    for container in spec.get("initContainers") or []:
        for key, value in container_gpu_requests(container).items():
            total[key] = max(total.get(key, 0), value)
    return {k: v for k, v in total.items() if v}


def is_terminal(pod):
    """True for a pod that has Succeeded or Failed."""
    return (pod.get("status") or {}).get("phase") in TERMINAL_PHASES


def node_requested(pods):
    """``{node: {resource: amount}}`` of GPU/MIG requests of the non-terminal pods bound to each node."""
    out = {}
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if not node or is_terminal(pod):
            continue
        for key, value in pod_requests(pod).items():
            slot = out.setdefault(node, {})
            slot[key] = slot.get(key, 0) + value
    return out


# -- filters ---------------------------------------------------------------------------------------


def tolerates(toleration, taint):
    """True if one toleration matches one taint (Kubernetes semantics: empty key + Exists matches all)."""
    if toleration.get("effect") and toleration.get("effect") != taint.get("effect"):
        return False
    operator = toleration.get("operator") or "Equal"
    if not toleration.get("key"):
        return operator == "Exists"
    if toleration.get("key") != taint.get("key"):
        return False
    if operator == "Exists":
        return True
    return (toleration.get("value") or "") == (taint.get("value") or "")


def untolerated_taints(pod, node):
    """The node's NoSchedule/NoExecute taints none of the pod's tolerations match."""
    tolerations = (pod.get("spec") or {}).get("tolerations") or []
    out = []
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if not any(tolerates(t, taint) for t in tolerations):
            out.append({"key": taint.get("key"), "value": taint.get("value"), "effect": taint.get("effect")})
    return out


def _match_expression(expr, labels, name):
    key, operator, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
    value = name if key == "metadata.name" else labels.get(key)
    present = value is not None
    if operator == "In":
        return present and value in values
    if operator == "NotIn":
        return not present or value not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt") and present and values:
        try:
            left, right = int(value), int(values[0])
        except ValueError:
            return False
        return left > right if operator == "Gt" else left < right
    return False


def node_selector_matches(selector, node):
    """True when ``node`` matches a NodeSelector (a claim allocation's ``nodeSelector``): its terms are ORed, the
    expressions and fields of a term ANDed; no selector matches every node."""
    terms = (selector or {}).get("nodeSelectorTerms") or []
    labels, name = labels_of(node), name_of(node)
    return not terms or any(
        all(
            _match_expression(e, labels, name) for e in (t.get("matchExpressions") or []) + (t.get("matchFields") or [])
        )
        for t in terms
    )


def selector_mismatches(pod, node):
    """What of the pod's nodeSelector / required node affinity the node fails; empty list when it matches.

    Each entry is ``{"source": "nodeSelector"|"nodeAffinity", "key", "wanted", "node_value"}``.
    """
    spec = pod.get("spec") or {}
    labels = labels_of(node)
    name = name_of(node)
    out = []
    for key, wanted in (spec.get("nodeSelector") or {}).items():
        if labels.get(key) != wanted:
            out.append({"source": "nodeSelector", "key": key, "wanted": wanted, "node_value": labels.get(key)})
    required = (
        ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
        or {}
    ).get("nodeSelectorTerms") or []
    if required:
        term_failures = []
        for term in required:
            failed = [
                e
                for e in (term.get("matchExpressions") or []) + (term.get("matchFields") or [])
                if not _match_expression(e, labels, name)
            ]
            if not failed:
                term_failures = []
                break
            term_failures.extend(failed)
        for expr in term_failures:
            key = expr.get("key")
            out.append(
                {
                    "source": "nodeAffinity",
                    "key": key,
                    "wanted": "%s %s" % (expr.get("operator"), ",".join(expr.get("values") or [])),
                    "node_value": name if key == "metadata.name" else labels.get(key),
                }
            )
    return out


def free_resources(node, requested):
    """``{resource: allocatable - requested}`` for every GPU/MIG resource the node advertises."""
    alloc = (node.get("status") or {}).get("allocatable") or {}
    return {k: to_int(v) - requested.get(k, 0) for k, v in alloc.items() if is_gpu_resource(k)}


def first_failing_filter(pod, node, requested):
    """``(filter, detail)`` of the first default-scheduler filter this node fails for the pod, or ``(None, None)``.

    ``requested`` is this node's entry of :func:`node_requested`.
    """
    spec = node.get("spec") or {}
    if spec.get("unschedulable") and not any(
        tolerates(t, {"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"})
        for t in (pod.get("spec") or {}).get("tolerations") or []
    ):
        return "unschedulable", {}
    taints = untolerated_taints(pod, node)
    if taints:
        return "taint", {"taint": taints[0], "untolerated": taints}
    mismatches = selector_mismatches(pod, node)
    if mismatches:
        return "affinity", {"mismatches": mismatches}
    free = free_resources(node, requested or {})
    short = {}
    for res, amount in pod_requests(pod).items():
        if free.get(res, 0) < amount:
            short[res] = {"requested": amount, "free": max(free.get(res, 0), 0)}
    if short:
        return "resources", {"insufficient": short}
    return None, None


# -- the scheduler's own message -------------------------------------------------------------------


def classify_reason(text):
    """Our filter name for one reason of a FailedScheduling message, plus the resource or taint it names."""
    if "were unschedulable" in text:
        return "unschedulable", {}
    if "untolerated taint" in text:
        match = _TAINT_RE.search(text)
        return "taint", ({"key": match.group(1).strip(), "value": match.group(2).strip()} if match else {})
    if "didn't match Pod's node affinity/selector" in text or "didn't match node selector" in text:
        return "affinity", {}
    if text.startswith("Insufficient "):
        return "resources", {"resource": text[len("Insufficient ") :].strip()}
    if "claim" in text:  # cannot allocate all claims, resourceclaim not available on the node, ... in use
        return "dra", {}
    return "other", {}


def _segments(text):
    out = []
    for part in text.rstrip().rstrip(".").split(", "):
        match = _SEGMENT_RE.match(part)
        if match:
            reason = match.group(2)
            kind, extra = classify_reason(reason)
            entry = {"count": int(match.group(1)), "reason": reason, "filter": kind}
            entry.update(extra)
            out.append(entry)
    return out


def parse_failed_scheduling(message):
    """Split ``0/N nodes are available: ... preemption: ...`` into its per-reason counts.

    Returns ``{"nodes": N, "reasons": [{count, reason, filter, resource?/key?}], "preemption": [...] or None}``;
    ``nodes`` is None when the message does not have the usual shape (then ``reasons`` is empty).
    """
    message = message or ""
    main, _sep, preemption = message.partition(" preemption: ")
    match = _AVAILABLE_RE.match(main)
    if not match:
        return {"nodes": None, "reasons": [], "preemption": None, "message": message}
    # the reasons end at the first ". " (newer schedulers add e.g. "no new claims to deallocate," before preemption)
    reasons = match.group(2).split(". ", 1)[0]
    out = {"nodes": int(match.group(1)), "reasons": _segments(reasons), "preemption": None, "message": message}
    if preemption:
        pre = _AVAILABLE_RE.match(preemption)
        if pre:
            out["preemption"] = [{"count": s["count"], "reason": s["reason"]} for s in _segments(pre.group(2))]
        else:
            out["preemption"] = [{"count": None, "reason": preemption.strip().rstrip(".")}]
    return out


def event_time(event):
    """When ``event`` was last seen, else when it was created (``""`` when neither is known)."""
    return last_seen(event) or meta_of(event).get("creationTimestamp") or ""


def latest_event(events, reason):
    """The newest event with ``reason`` among ``events`` (already filtered to one object), or None."""
    matching = [e for e in events if e.get("reason") == reason]
    return max(matching, key=event_time) if matching else None
