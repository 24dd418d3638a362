# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Pure logic of the canary upgrade (no API calls): waves, the progress record, the gate and the proof.

The cluster-side steps that use these live in ``_canary.py``; the module is ``gpu_canary_upgrade``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import math
import re

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.cluster_view import (
    GPU_RESOURCE,
    UPGRADE_SKIP_LABEL,
    UPGRADE_STATE_LABEL,
    is_gpu_node,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.errors import GpuOpsError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator import compat as compat

RECORD_VERSION = 1
RECORD_KEY = "record"
DEFAULT_TAINT_KEY = "gpuops.io/canary-upgrade"
FAILED_ANNOTATION = "gpuops.io/canary-upgrade-failed"
DRIVER_VERSION_LABEL = "nvidia.com/cuda.driver-version.full"
#: The upgrade controller records a node's cordon state before its first cordon here.
INITIAL_UNSCHEDULABLE_ANNOTATION = "nvidia.com/gpu-driver-upgrade.node-initial-state.unschedulable"
XID_REASONS = ("XidCriticalError", "GPUXidError")

#: Upgrade states in which the operator's upgrade controller is working on a node (it cordons them itself).
IN_PROGRESS_STATES = frozenset(
    (
        "cordon-required",
        "wait-for-jobs-required",
        "pod-deletion-required",
        "drain-required",
        "pod-restart-required",
        "validation-required",
        "uncordon-required",
    )
)

#: Wave status values, in the order a wave moves through them.
WAVE_PENDING, WAVE_UPGRADING, WAVE_UPGRADED, WAVE_PROVEN, WAVE_FAILED = (
    "pending",
    "upgrading",
    "upgraded",
    "proven",
    "failed",
)

_PERCENT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*%\s*$")


class PlanError(GpuOpsError, ValueError):
    """An input that cannot be planned (message names the input and the fix)."""


def _meta(obj):
    return obj.get("metadata") or {}


def name_of(obj):
    return _meta(obj).get("name")


def labels_of(obj):
    return _meta(obj).get("labels") or {}


def annotations_of(obj):
    return _meta(obj).get("annotations") or {}


# ---------------------------------------------------------------------------------------------- waves


def parse_wave(value, index):
    """``(kind, amount)`` of one wave entry: ``("count", n)`` or ``("percent", p)``."""
    if isinstance(value, bool):
        raise PlanError("waves[%d] is %r; use a node count such as 1 or a percentage such as '25%%'" % (index, value))
    if isinstance(value, int):
        if value < 1:
            raise PlanError("waves[%d] is %d; a node count must be at least 1" % (index, value))
        return ("count", value)
    text = str(value).strip()
    if text.isdigit():
        return parse_wave(int(text), index)
    match = _PERCENT.match(text)
    if not match:
        raise PlanError(
            "waves[%d] is %r; use a node count such as 1 or a percentage such as '25%%' (cumulative)" % (index, value)
        )
    pct = float(match.group(1))
    if pct <= 0 or pct > 100:
        raise PlanError("waves[%d] is %r; a percentage must be above 0%% and at most 100%%" % (index, value))
    return ("percent", pct)


def wave_targets(waves, total):
    """Cumulative node counts reached after each wave entry (counts and percentages of ``total``).

    Counts are cumulative like percentages: ``[1, "10%", "25%", "100%"]`` over 40 nodes reaches 1, 4, 10, 40.
    A percentage rounds up. Targets must not go down; an entry that adds no node is dropped.
    """
    out = []
    last = 0
    for index, value in enumerate(waves):
        kind, amount = parse_wave(value, index)
        target = amount if kind == "count" else int(math.ceil(total * amount / 100.0 - 1e-9))
        target = min(target, total)
        if target < last:
            raise PlanError(
                "waves[%d] (%r) reaches %d node(s), fewer than the %d the waves before it reach; waves are "
                "cumulative, so list them in increasing order" % (index, value, target, last)
            )
        if target > last:
            out.append(target)
            last = target
    return out


def plan_waves(canary, rest, waves):
    """The ordered waves: ``[{"index", "name", "nodes"}]``, the canary first, then ``rest`` per ``waves``.

    ``rest`` is taken in the given order (the caller sorts it, e.g. by pool then name, for a stable plan).
    """
    plan = []
    if canary:
        plan.append({"index": 0, "name": "canary", "nodes": list(canary)})
    start = 0
    for target in wave_targets(waves, len(rest)):
        plan.append({"index": len(plan), "name": "wave-%d" % len(plan), "nodes": list(rest[start:target])})
        start = target
    return plan, list(rest[start:])


def natural_key(name):
    """Sort key that orders ``h100-2`` before ``h100-10``."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", name or "")]


def interleave_pools(names, pool_of):
    """``names`` reordered round-robin over pools (each pool in natural name order) so every wave touches every
    pool."""
    pools = {}
    for n in sorted(names, key=natural_key):
        pools.setdefault(pool_of(n), []).append(n)
    order = sorted(pools, key=lambda p: (p is None, str(p)))
    out = []
    while any(pools[p] for p in order):
        for p in order:
            if pools[p]:
                out.append(pools[p].pop(0))
    return out


# ---------------------------------------------------------------------------------------------- record


def new_record(target, source, taint, plan, unplanned, excluded, now):
    return {
        "version": RECORD_VERSION,
        "phase": "in-progress",
        "target": target,
        "from": source,
        "taint": taint,
        "waves": [dict(w, status=WAVE_PENDING, reason=None, started=None, finished=None) for w in plan],
        "unplanned": list(unplanned),
        "excluded": list(excluded),
        "skip_labelled": [],
        "started": now,
        "updated": now,
        "reason": None,
    }


def decode_record(configmap):
    """The record stored in a ConfigMap dict, or None (no ConfigMap, no or unreadable record)."""
    if not configmap:
        return None
    raw = (configmap.get("data") or {}).get(RECORD_KEY)
    if not raw:
        return None
    try:
        record = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(record, dict) or record.get("version") != RECORD_VERSION:
        return None
    return record


def encode_record(record):
    return json.dumps(record, sort_keys=True, separators=(",", ":"))


def same_target(record, target):
    return bool(record) and (record.get("target") or {}) == target


def next_wave(record):
    """Index of the first wave that is not proven, or None when all are."""
    for wave in record.get("waves") or []:
        if wave.get("status") != WAVE_PROVEN:
            return wave["index"]
    return None


# ---------------------------------------------------------------------------------------------- tolerations


def tolerates(tolerations, key, effect):
    """True if one toleration in the list tolerates a taint ``key:effect`` (any value)."""
    for tol in tolerations or []:
        op = tol.get("operator") or "Equal"
        tol_effect = tol.get("effect")
        if tol_effect and tol_effect != effect:
            continue
        if tol.get("key") in (None, "") and op == "Exists":
            return True
        if tol.get("key") == key and (op == "Exists" or tol.get("value") in (None, "", "true")):
            return True
    return False


def canary_toleration(key, effect):
    return {"key": key, "operator": "Exists", "effect": effect}


def with_toleration(tolerations, key, effect):
    """``(new list, changed)``: ``tolerations`` plus one for the canary taint when none tolerates it."""
    tolerations = list(tolerations or [])
    if tolerates(tolerations, key, effect):
        return tolerations, False
    return tolerations + [canary_toleration(key, effect)], True


def taints_with(taints, key, effect, value):
    """``(new list, changed)`` with the canary taint present."""
    taints = list(taints or [])
    if any(t.get("key") == key and t.get("effect") == effect for t in taints):
        return taints, False
    return taints + [{"key": key, "value": value, "effect": effect}], True


def taints_without(taints, key, effect):
    taints = list(taints or [])
    kept = [t for t in taints if not (t.get("key") == key and t.get("effect") == effect)]
    return kept, len(kept) != len(taints)


# ---------------------------------------------------------------------------------------------- gate


def _container_requests_gpu(container):
    res = container.get("resources") or {}
    for key in list(res.get("limits") or {}) + list(res.get("requests") or {}):
        if key == GPU_RESOURCE or key.startswith("nvidia.com/gpu") or key.startswith("nvidia.com/mig-"):
            return True
    return False


def _pod_requests_gpu(pod):
    return any(_container_requests_gpu(c) for c in (pod.get("spec") or {}).get("containers") or [])


def active_gpu_pods(pods, nodes=None):
    """Pods that request GPUs, are bound to one of ``nodes`` (all when None) and have not finished."""
    out = []
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if not node or (nodes is not None and node not in nodes):
            continue
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        if _meta(pod).get("deletionTimestamp"):
            continue
        if _pod_requests_gpu(pod):
            out.append(pod)
    return out


def parse_selector(selector):
    """A label selector string as a list of ``(key, op, values)``; supports ``=``, ``==``, ``!=``, ``in``,
    ``notin``, ``key`` and ``!key``."""
    terms = []
    text = (selector or "").strip()
    if not text:
        return terms
    # split on commas outside parentheses
    depth, cur, parts = 0, "", []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    for part in (p.strip() for p in parts):
        if not part:
            continue
        m = re.match(r"^([^\s!=]+)\s+(in|notin)\s*\(([^)]*)\)$", part)
        if m:
            values = [v.strip() for v in m.group(3).split(",") if v.strip()]
            terms.append((m.group(1), m.group(2), values))
        elif "!=" in part:
            k, v = part.split("!=", 1)
            terms.append((k.strip(), "!=", [v.strip()]))
        elif "=" in part:
            k, v = part.replace("==", "=").split("=", 1)
            terms.append((k.strip(), "=", [v.strip()]))
        elif part.startswith("!"):
            terms.append((part[1:].strip(), "!", []))
        else:
            terms.append((part, "exists", []))
    return terms


def selector_matches(labels, terms):
    for key, op, values in terms:
        have = labels.get(key)
        if op == "=" and have != values[0]:
            return False
        if op == "!=" and have == values[0]:
            return False
        if op == "in" and have not in values:
            return False
        if op == "notin" and have in values:
            return False
        if op == "exists" and key not in labels:
            return False
        if op == "!" and key in labels:
            return False
    return True


def _pdb_matches(pdb, pod):
    if _meta(pdb).get("namespace") != _meta(pod).get("namespace"):
        return False
    sel = (pdb.get("spec") or {}).get("selector") or {}
    labels = labels_of(pod)
    for k, v in (sel.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for expr in sel.get("matchExpressions") or []:
        op = expr.get("operator")
        key = expr.get("key")
        values = expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and labels.get(key) in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return bool(sel.get("matchLabels") or sel.get("matchExpressions"))


def pod_ref(pod):
    return "%s/%s" % (_meta(pod).get("namespace"), name_of(pod))


#: NVIDIA CUDA images (``nvidia/cuda`` on Docker Hub, ``nvcr.io/nvidia/cuda``, or a mirror that keeps the path):
#: the tag starts with the CUDA version, e.g. ``12.4.1-base-ubuntu22.04`` or ``13.0.0-runtime-ubuntu24.04``.
_NVIDIA_CUDA_REPO = re.compile(r"(^|/)nvidia/cuda$")
_CUDA_TAG = re.compile(r"^(\d+)\.(\d+)(?:\.\d+)*(?:-|$)")
_CUDA_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.\d+)*$")


def split_image(image):
    """``"nvcr.io/nvidia/cuda:12.4.1-base@sha256:..."`` -> ``("nvcr.io/nvidia/cuda", "12.4.1-base")``; the tag
    is ``None`` when there is none (a registry port is not a tag)."""
    ref = str(image or "").split("@", 1)[0]
    repo, _sep, tag = ref.rpartition(":")
    if not repo or "/" in tag:
        return ref, None
    return repo, tag


def cuda_image_rules(entries):
    """Compile the user's ``cuda_images`` entries (``{image: regex, cuda: "12.4"}``; without ``cuda`` the regex
    captures the version in a group named ``cuda`` or its first group) as ``[(regex, cuda or None, text)]``."""
    rules = []
    for i, entry in enumerate(entries or []):
        if not isinstance(entry, dict) or not entry.get("image"):
            raise PlanError(
                "cuda_images[%d] needs an image regex, e.g. {image: '^registry.example/ml/', cuda: '12.4'}" % i
            )
        try:
            rx = re.compile(str(entry["image"]))
        except re.error as e:
            raise PlanError(
                "cuda_images[%d].image %r is not a regular expression: %s" % (i, entry["image"], e)
            ) from None
        cuda = entry.get("cuda")
        if cuda is not None and not _CUDA_VERSION.match(str(cuda)):
            raise PlanError("cuda_images[%d].cuda %r is not a CUDA version like 12.4" % (i, cuda))
        if cuda is None and not rx.groups:
            raise PlanError(
                "cuda_images[%d] has no cuda and its regex %r captures nothing: add cuda: '12.4' or a group "
                "(?P<cuda>\\d+\\.\\d+)" % (i, entry["image"])
            )
        rules.append((rx, None if cuda is None else str(cuda), str(entry["image"])))
    return rules


def _major_minor(text):
    m = _CUDA_VERSION.match(str(text or "").strip())
    return "%s.%s" % (int(m.group(1)), int(m.group(2))) if m else None


def image_cuda(image, rules=()):
    """``(cuda major.minor, how it is known)`` for an image reference, or ``(None, why not)``: the user's rules
    first (in order), then the NVIDIA CUDA image tag. Nothing is guessed."""
    for rx, cuda, text in rules or ():
        m = rx.search(str(image or ""))
        if not m:
            continue
        if cuda is None:
            found = m.groupdict().get("cuda") or (m.group(1) if rx.groups else None)
            cuda = _major_minor(found)
            if cuda is None:
                return None, "cuda_images rule %r matched but captured %r, not a CUDA version" % (text, found)
        return _major_minor(cuda), "cuda_images rule %r" % text
    repo, tag = split_image(image)
    if _NVIDIA_CUDA_REPO.search(repo):
        m = _CUDA_TAG.match(tag or "")
        if m:
            return "%d.%d" % (int(m.group(1)), int(m.group(2))), "NVIDIA CUDA image tag"
        return None, "NVIDIA CUDA image without a version tag"
    return None, "not an NVIDIA CUDA image and no cuda_images rule matches"


def cuda_check(pods, planned, target_driver, rules=(), min_driver=compat.min_driver_for_cuda):
    """The CUDA versions of the GPU containers of running pods on ``planned`` nodes against ``target_driver``:
    ``{"target_driver", "workloads", "unknown", "failures"}``. A container whose CUDA version is not knowable
    (or not in the compatibility matrix) is listed in ``unknown`` and fails nothing; without a target driver
    (a chart-only upgrade) the versions are listed and nothing is compared."""
    workloads, unknown, failures = [], [], []
    for pod in active_gpu_pods(pods, None if planned is None else set(planned)):
        for c in (pod.get("spec") or {}).get("containers") or []:
            if not _container_requests_gpu(c):
                continue
            image = c.get("image") or ""
            entry = {
                "pod": pod_ref(pod),
                "node": (pod.get("spec") or {}).get("nodeName"),
                "container": c.get("name"),
                "image": image,
            }
            cuda, how = image_cuda(image, rules)
            required = None
            if cuda is not None:
                try:
                    required = min_driver(cuda)
                except compat.CompatError as e:
                    how = str(e)
            if required is None:
                unknown.append(dict(entry, cuda=cuda, severity="info", reason="unknown CUDA: %s" % how))
                continue
            ok = None if not target_driver else compat.driver_at_least(target_driver, required)
            workloads.append(dict(entry, cuda=cuda, source=how, required_driver=required, ok=ok))
            if ok is False:
                failures.append(
                    "pod %s (container %s, image %s) runs CUDA %s, which needs driver %s or later; the target "
                    "driver %s is older: upgrade to a driver >= %s, move the workload off the planned nodes, or "
                    "exclude its node"
                    % (entry["pod"], entry["container"], image, cuda, required, target_driver, required)
                )
    return {
        "target_driver": target_driver or None,
        "workloads": sorted(workloads, key=lambda w: (w["pod"], w["container"] or "")),
        "unknown": sorted(unknown, key=lambda w: (w["pod"], w["container"] or "")),
        "failures": failures,
    }


def gate(nodes, pods, pdbs, planned, record, taint_key, wait_selector="", target_driver=None, cuda_rules=()):
    """The cluster part of the gate: ``{"passed", "failures", "pdbs", "gpu_jobs", "cordoned"}``.

    Fails on a planned node in ``upgrade-failed`` that this run did not leave there (the record's failed wave
    is ours to retry) and on a planned node cordoned by someone else (it eats ``maxUnavailable`` of the
    operator's upgrade controller). Lists the PodDisruptionBudgets that cover GPU pods on planned nodes and the
    GPU jobs there (those that match the waitForCompletion selector are waited for). Fails when a running GPU
    workload on a planned node needs a newer driver than ``target_driver`` for its image's CUDA version
    (``cuda``, see :func:`cuda_check`).
    """
    planned = set(planned)
    ours_failed = set()
    for wave in (record or {}).get("waves") or []:
        if wave.get("status") == WAVE_FAILED:
            ours_failed.update(wave.get("nodes") or [])
    failures = []
    cordoned = []
    for node in nodes:
        n = name_of(node)
        if n not in planned:
            continue
        state = labels_of(node).get(UPGRADE_STATE_LABEL)
        if state == "upgrade-failed" and n not in ours_failed and FAILED_ANNOTATION not in annotations_of(node):
            failures.append(
                "node %s is in upgrade-failed from an earlier upgrade; fix it and relabel it "
                "%s=upgrade-required (or exclude it) before a canary upgrade" % (n, UPGRADE_STATE_LABEL)
            )
        # the upgrade controller cordons the nodes it works on, and leaves a failed one cordoned
        if (node.get("spec") or {}).get("unschedulable") and state not in IN_PROGRESS_STATES | {"upgrade-failed"}:
            cordoned.append(n)
            failures.append(
                "node %s is cordoned by someone else (no upgrade in progress); it counts against the upgrade "
                "controller's maxUnavailable: uncordon it or exclude it from the plan" % n
            )
    terms = parse_selector(wait_selector)
    jobs = []
    covered = {}
    for pod in active_gpu_pods(pods, planned):
        wait = bool(terms) and selector_matches(labels_of(pod), terms)
        pod_pdbs = [pdb for pdb in pdbs if _pdb_matches(pdb, pod)]
        for pdb in pod_pdbs:
            covered.setdefault(pod_ref(pdb), pdb)
        jobs.append(
            {
                "pod": pod_ref(pod),
                "node": (pod.get("spec") or {}).get("nodeName"),
                "started": (pod.get("status") or {}).get("startTime") or _meta(pod).get("creationTimestamp"),
                "wait_for_completion": wait,
                "pdbs": [pod_ref(p) for p in pod_pdbs],
            }
        )
    pdb_list = [
        {
            "name": ref,
            "disruptions_allowed": (pdb.get("status") or {}).get("disruptionsAllowed"),
            "min_available": (pdb.get("spec") or {}).get("minAvailable"),
            "max_unavailable": (pdb.get("spec") or {}).get("maxUnavailable"),
        }
        for ref, pdb in sorted(covered.items())
    ]
    del taint_key  # the canary taint of an interrupted run is expected, not a gate failure
    cuda = cuda_check(pods, planned, target_driver, cuda_rules)
    failures.extend(cuda["failures"])
    return {
        "passed": not failures,
        "failures": failures,
        "cordoned": cordoned,
        "pdbs": pdb_list,
        "gpu_jobs": sorted(jobs, key=lambda j: j["pod"]),
        "cuda": cuda,
    }


# ---------------------------------------------------------------------------------------------- proof


def _event_time(ev):
    return ev.get("lastTimestamp") or ev.get("eventTime") or _meta(ev).get("creationTimestamp") or ""


def xid_events(events, node_name, since):
    """Xid events of a node with a time at or after ``since`` (ISO 8601 UTC strings compare as text)."""
    out = []
    for ev in events:
        inv = ev.get("involvedObject") or {}
        if inv.get("kind") != "Node" or inv.get("name") != node_name:
            continue
        if ev.get("reason") not in XID_REASONS and "Xid" not in (ev.get("message") or ""):
            continue
        if since and _event_time(ev) < since:
            continue
        out.append(ev)
    return out


def node_upgrade_status(node, target_driver):
    """``("done" | "failed" | "waiting", detail)`` of one node's driver upgrade."""
    labels = labels_of(node)
    state = labels.get(UPGRADE_STATE_LABEL) or ""
    version = labels.get(DRIVER_VERSION_LABEL)
    if state == "upgrade-failed":
        return "failed", "the operator's upgrade controller set %s=upgrade-failed" % UPGRADE_STATE_LABEL
    if labels.get(UPGRADE_SKIP_LABEL) == "true":
        return "waiting", "skip label still set"
    if target_driver and version != target_driver:
        return "waiting", "driver %s, state %s" % (version or "unknown", state or "none")
    if state not in ("upgrade-done", ""):
        return "waiting", "state %s" % state
    return "done", "driver %s, state %s" % (version or "unknown", state or "none")


def prove_node(view, target_driver, xids, dcgm_xid=None):
    """The cluster-side proof of one upgraded node from its ``_cluster_view.node_view``: a list of failures."""
    failures = []
    labels = view.get("labels") or {}
    if target_driver and labels.get(DRIVER_VERSION_LABEL) != target_driver:
        failures.append(
            "driver label %s is %s, not the target %s"
            % (DRIVER_VERSION_LABEL, labels.get(DRIVER_VERSION_LABEL) or "missing", target_driver)
        )
    if not view.get("ready"):
        failures.append("node is not Ready")
    cap = view.get("capacity") or {}
    alloc = view.get("allocatable") or {}
    cap_total = sum(v for v in cap.values() if isinstance(v, int))
    alloc_total = sum(v for v in alloc.values() if isinstance(v, int))
    if cap_total <= 0:
        failures.append("no GPU capacity advertised")
    elif alloc_total < cap_total:
        failures.append("allocatable GPUs %d below capacity %d" % (alloc_total, cap_total))
    operands = view.get("operands") or {}
    if "operator-validator" not in operands:
        failures.append("no nvidia-operator-validator pod on the node")
    bad = sorted(
        "%s (%s)" % (c, s.get("reason") or s.get("phase"))
        for c, s in operands.items()
        if not (s.get("ready") or s.get("phase") == "Succeeded")
    )
    if bad:
        failures.append("operand pods not ready: " + ", ".join(bad))
    if xids:
        failures.append(
            "new Xid event(s): " + "; ".join((e.get("message") or e.get("reason") or "")[:120] for e in xids)
        )
    if dcgm_xid:
        failures.append("DCGM reports XID errors %s" % dcgm_xid)
    return failures


_METRIC = re.compile(r"^(DCGM_FI_DEV_XID_ERRORS)\{([^}]*)\}\s+([0-9.eE+-]+)\s*$")


def dcgm_xid_by_node(text):
    """``{Hostname: [xid values > 0]}`` from a DCGM exporter's Prometheus text."""
    out = {}
    for line in (text or "").splitlines():
        m = _METRIC.match(line.strip())
        if not m:
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
        try:
            value = float(m.group(3))
        except ValueError:
            continue
        if value > 0:
            out.setdefault(labels.get("Hostname"), []).append(int(value))
    return out


def is_planned_gpu_node(node, excluded_label=UPGRADE_SKIP_LABEL):
    """A GPU node the canary upgrade may move: GPU node and not skipped by the user beforehand."""
    return is_gpu_node(node) and labels_of(node).get(excluded_label) != "true"
