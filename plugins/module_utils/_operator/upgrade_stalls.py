# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""Why a node's driver upgrade does not move: its state, since when (the cluster's own timestamps), the cause the
cluster shows and the fix as a command.

The states are those of NVIDIA's upgrade controller (k8s-operator-libs ``pkg/upgrade``, run by the GPU Operator):
a node waits in ``upgrade-required`` while it carries the skip label or while cordoned and NotReady nodes use up
``maxUnavailable``; in ``wait-for-jobs-required`` while pods matching ``waitForCompletion.podSelector`` run; in
``pod-deletion-required`` or ``drain-required`` while an eviction is refused by a PodDisruptionBudget or a pod stays
terminating; in ``pod-restart-required`` while the new driver pod does not run ready; in ``validation-required``
while a validator pod is not ready (600 s, then ``upgrade-failed``); and in ``upgrade-failed`` until its driver pod
runs ready in sync with its DaemonSet (the controller then moves on by itself) or someone relabels it
``upgrade-required``. Since when: the controller's own Event for the node's current state (reason
``GPUDriverUpgrade``, "Successfully updated node state label to <state>"), else its start-time annotations, else the
time of the last write by the field manager that owns the state label.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import calendar
import math
import re
import time

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import (
    annotations_of,
    is_true,
    labels_of,
    meta_of,
    name_of,
    namespace_of,
    to_int,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.cluster_view import (
    UPGRADE_SKIP_LABEL,
    UPGRADE_STATE_LABEL,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.quarantine import (
    CONTROLLER_CORDON_STATES,
)

EVENT_REASON = "GPUDriverUpgrade"
STATE_MESSAGE = "Successfully updated node state label to "
STATE_FIELD = "f:" + UPGRADE_STATE_LABEL
WAIT_START_ANNOTATION = "nvidia.com/gpu-driver-upgrade-wait-for-pod-completion-start-time"
VALIDATION_START_ANNOTATION = "nvidia.com/gpu-driver-upgrade-validation-start-time"
VALIDATION_TIMEOUT = 600
DRIVER_COMPONENT = ("app.kubernetes.io/component", "nvidia-driver")
VALIDATOR_APP = ("app", "nvidia-operator-validator")
DONE = ("", "upgrade-done")
RETRY = "kubectl label node %s %s=upgrade-required --overwrite"


def seconds_of(timestamp):
    """Epoch seconds of a Kubernetes timestamp (``2026-12-06T07:30:00Z``, fractions allowed); None if unreadable."""
    text = re.sub(r"\.\d+", "", str(timestamp or ""))
    try:
        return calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ"))
    except ValueError:
        return None


def _since(node, state, events):
    """``(timestamp text, epoch seconds)`` since the node is in ``state``; ``(None, None)`` when nothing says."""
    best = None
    for event in events:
        if (event.get("involvedObject") or {}).get("name") != name_of(node):
            continue
        # client-go's recorder combines an object's similar events after ten: "(combined from similar events): ..."
        if not str(event.get("message") or "").endswith(STATE_MESSAGE + state):
            continue
        stamp = event.get("lastTimestamp") or (event.get("series") or {}).get("lastObservedTime")
        stamp = stamp or event.get("eventTime") or event.get("firstTimestamp")
        if seconds_of(stamp) is not None and (best is None or seconds_of(stamp) > seconds_of(best)):
            best = stamp
    if best:
        return best, seconds_of(best)
    key = {"wait-for-jobs-required": WAIT_START_ANNOTATION, "validation-required": VALIDATION_START_ANNOTATION}
    started = to_int(annotations_of(node).get(key.get(state, "")), 0)
    if started:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)), started
    # the recorder drops an object's events past its spam budget (25, then one per 5 minutes): then the time of the
    # last write by the field manager that owns the state label
    owners = [
        m.get("time")
        for m in meta_of(node).get("managedFields") or []
        if STATE_FIELD in ((m.get("fieldsV1") or {}).get("f:metadata") or {}).get("f:labels", {})
        and seconds_of(m.get("time")) is not None
    ]
    if owners:
        last = max(owners, key=seconds_of)
        return last, seconds_of(last)
    return None, None


def _warning(node, events):
    """The upgrade controller's latest Warning message for the node, or None."""
    mine = [
        e for e in events if (e.get("involvedObject") or {}).get("name") == name_of(node) and e.get("type") == "Warning"
    ]
    mine.sort(key=lambda e: seconds_of(e.get("lastTimestamp") or e.get("eventTime")) or 0)
    return mine[-1].get("message") if mine else None


def _selected(labels, selector):
    """Whether ``labels`` match an equality-based label selector string (``a=b,c!=d,e``)."""
    for term in [t.strip() for t in str(selector or "").split(",") if t.strip()]:
        if "!=" in term:
            key, value = [x.strip() for x in term.split("!=", 1)]
            if labels.get(key) == value:
                return False
        elif "=" in term:
            key, value = [x.strip() for x in term.replace("==", "=").split("=", 1)]
            if labels.get(key) != value:
                return False
        elif labels.get(term) is None:
            return False
    return True


def _pod_ref(pod):
    return "%s/%s" % (namespace_of(pod), name_of(pod))


def _kubectl(pod, rest):
    return "kubectl -n %s %s" % (namespace_of(pod), rest % name_of(pod))


def _finished(pod):
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _daemonset_pod(pod):
    return any(r.get("kind") == "DaemonSet" for r in meta_of(pod).get("ownerReferences") or [])


def _requests_gpu(pod):
    for container in (pod.get("spec") or {}).get("containers") or []:
        resources = container.get("resources") or {}
        for key in list(resources.get("limits") or {}) + list(resources.get("requests") or {}):
            if key == "nvidia.com/gpu" or key.startswith("nvidia.com/mig-"):
                return True
    return False


def _not_ready(pod):
    """Why a pod is not running ready (``"CrashLoopBackOff, restarted 11 times: <message>"``), or None when it is."""
    status = pod.get("status") or {}
    statuses = list(status.get("initContainerStatuses") or []) + list(status.get("containerStatuses") or [])
    if (
        status.get("phase") == "Running"
        and statuses
        and all(s.get("ready") for s in status.get("containerStatuses") or [])
    ):
        return None
    for st in statuses:
        if st.get("ready"):
            continue
        waiting = (st.get("state") or {}).get("waiting") or {}
        last = ((st.get("lastState") or {}).get("terminated") or {}).get("message") or ""
        text = "container %s %s" % (st.get("name"), waiting.get("reason") or "not ready")
        text += ", restarted %d times" % st["restartCount"] if st.get("restartCount") else ""
        return text + (": %s" % last.strip().splitlines()[-1] if last.strip() else "")
    return "phase %s" % (status.get("phase") or "unknown")


def _terminating(pods):
    """``(cause, fix)`` for the first pod stuck terminating among ``pods``, or None."""
    for pod in pods:
        deleted = meta_of(pod).get("deletionTimestamp")
        if not deleted:
            continue
        finalizers = meta_of(pod).get("finalizers") or []
        cause = "pod %s is stuck terminating since %s" % (_pod_ref(pod), deleted)
        if finalizers:
            cause += " (finalizers: %s)" % ", ".join(finalizers)
            fix = _kubectl(pod, "patch pod %s --type merge -p '{\"metadata\":{\"finalizers\":null}}'")
        else:
            fix = _kubectl(pod, "delete pod %s --grace-period=0 --force")
        return cause, fix
    return None


def _refused(pods, pdbs):
    """``(cause, fix)`` for the first pod among ``pods`` whose eviction a PodDisruptionBudget refuses, or None."""
    for pod in pods:
        for pdb in pdbs:
            spec, status = pdb.get("spec") or {}, pdb.get("status") or {}
            selector = (spec.get("selector") or {}).get("matchLabels")
            if namespace_of(pdb) != namespace_of(pod) or not selector:
                continue
            if not all(labels_of(pod).get(k) == v for k, v in selector.items()):
                continue
            if to_int(status.get("disruptionsAllowed"), 0) > 0:
                continue
            cause = (
                "the eviction of pod %s is refused: PodDisruptionBudget %s allows 0 disruptions (%s healthy, %s "
                "desired)"
                % (
                    _pod_ref(pod),
                    _pod_ref(pdb),
                    status.get("currentHealthy", "?"),
                    status.get("desiredHealthy", "?"),
                )
            )
            return cause, _kubectl(
                pod, "delete pod %s"
            ) + "  # a delete is not an eviction: the budget does not hold it"
    return None


def _budget(node, managed, policy, cp_name):
    """``(cause, fix, stalled)`` of a node the controller has not started, by its skip label and the slots."""
    name = name_of(node)
    if is_true(labels_of(node).get(UPGRADE_SKIP_LABEL)):
        return (
            "held by the skip label %s=true" % UPGRADE_SKIP_LABEL,
            "kubectl label node %s %s-" % (name, UPGRADE_SKIP_LABEL),
            True,
        )
    total = len(managed)
    raw = policy.get("maxUnavailable", "25%")
    text = str(raw if raw is not None else "25%")
    limit = int(math.ceil(total * float(text[:-1]) / 100.0)) if text.endswith("%") else to_int(text, 0)
    unavailable = [n for n in managed if _unavailable(n)]
    if (node.get("spec") or {}).get("unschedulable"):
        return "cordoned, so the controller takes it past the slot limit at its next pass", None, False
    if len(unavailable) >= limit:
        unrelated = [n for n in unavailable if labels_of(n).get(UPGRADE_STATE_LABEL) not in CONTROLLER_CORDON_STATES]
        shown = ", ".join("%s (%s)" % (name_of(n), _unavailable(n)) for n in (unrelated or unavailable)[:5])
        cause = "maxUnavailable %s of %d node(s) = %d, used up by %d unavailable node(s)%s: %s" % (
            text,
            total,
            limit,
            len(unavailable),
            ", %d of them not upgrading" % len(unrelated) if unrelated else "",
            shown,
        )
        bigger = len(unavailable) + 1
        fix = "kubectl patch clusterpolicy %s --type merge -p '%s'" % (
            cp_name,
            '{"spec":{"driver":{"upgradePolicy":{"maxUnavailable":%d}}}}' % bigger,
        )
        if unrelated and _unavailable(unrelated[0]) == "cordoned":
            fix = "kubectl uncordon %s  # or raise the budget: %s" % (name_of(unrelated[0]), fix)
        return cause, fix, True
    parallel = to_int(policy.get("maxParallelUpgrades"), 1)
    busy = [n for n in managed if labels_of(n).get(UPGRADE_STATE_LABEL) in CONTROLLER_CORDON_STATES]
    if parallel and len(busy) >= parallel:
        shown = ", ".join("%s (%s)" % (name_of(n), labels_of(n)[UPGRADE_STATE_LABEL]) for n in busy[:5])
        return "waiting for a slot: maxParallelUpgrades=%d taken by %s" % (parallel, shown), None, False
    return "waiting for the upgrade controller to start it", None, False


def _unavailable(node):
    """``"cordoned"``, ``"NotReady"`` or None: what makes a node count against maxUnavailable."""
    if (node.get("spec") or {}).get("unschedulable"):
        return "cordoned"
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready" and cond.get("status") != "True":
            return "NotReady"
    return None


def _driver_cause(pod, missing):
    """``(cause, fix)`` of a node's driver pod that does not run ready (``pod`` None: ``missing`` explains)."""
    if pod is None:
        return missing, None
    gone = _terminating([pod])
    if gone:
        return gone
    why = _not_ready(pod)
    if why:
        return "driver pod %s is not ready: %s" % (_pod_ref(pod), why), _kubectl(
            pod, "logs %s --all-containers --previous"
        )
    return None


def _cause(node, state, ctx):
    """``(cause, fix, stalled)`` of one node in ``state``."""
    name, policy = name_of(node), ctx["policy"]
    pods = [p for p in ctx["pods"] if (p.get("spec") or {}).get("nodeName") == name]
    driver = [p for p in pods if labels_of(p).get(DRIVER_COMPONENT[0]) == DRIVER_COMPONENT[1]]
    driver_pod = driver[0] if driver else None
    if state == "upgrade-required":
        return _budget(node, ctx["managed"], policy, ctx["cp_name"])
    if state == "wait-for-jobs-required":
        selector = (policy.get("waitForCompletion") or {}).get("podSelector")
        jobs = [p for p in pods if selector and _selected(labels_of(p), selector) and not _finished(p)]
        if jobs:
            timeout = to_int((policy.get("waitForCompletion") or {}).get("timeoutSeconds"), 0)
            cause = "waiting for %d pod(s) matching waitForCompletion.podSelector %s to finish: %s" % (
                len(jobs),
                selector,
                ", ".join(_pod_ref(p) for p in jobs[:5]),
            )
            cause += " (at most %d s)" % timeout if timeout else " (no timeout: it waits as long as they run)"
            return cause, _kubectl(jobs[0], "delete pod %s") + "  # or wait for it to finish", True
    if state in ("pod-deletion-required", "drain-required"):
        if state == "drain-required":
            selector = ((policy.get("drain") or {}).get("podSelector")) or ""
            movable = [p for p in pods if not _daemonset_pod(p) and _selected(labels_of(p), selector)]
        else:
            movable = [p for p in pods if _requests_gpu(p)]
        found = _terminating(movable) or _refused([p for p in movable if not _finished(p)], ctx["pdbs"])
        if found:
            return found + (True,)
    if state == "pod-restart-required":
        found = _driver_cause(driver_pod, "no driver pod on the node yet (its DaemonSet has not made the new one)")
        if found and found[1]:
            return found + (True,)
    if state == "validation-required":
        validators = [p for p in pods if labels_of(p).get(VALIDATOR_APP[0]) == VALIDATOR_APP[1]]
        for pod in validators:
            why = _not_ready(pod)
            if why:
                cause = "validator pod %s is not ready: %s (the controller fails the node after %d s)" % (
                    _pod_ref(pod),
                    why,
                    VALIDATION_TIMEOUT,
                )
                return cause, _kubectl(pod, "logs %s --all-containers --previous"), True
        if not validators:
            return "no validator pod (app=nvidia-operator-validator) on the node", None, True
    if state == "upgrade-failed":
        found = _driver_cause(driver_pod, None)
        if found and found[0]:
            cause = found[0] + "; the controller moves the node on by itself once the driver pod runs ready"
            return cause, found[1], True
        warning = _warning(node, ctx["events"]) or "the upgrade controller gave no reason"
        return "failed: %s" % warning, RETRY % (name, UPGRADE_STATE_LABEL), True
    return "in progress", None, False


def diagnose(nodes, pods, pdbs, events, cp, now):
    """One entry per node whose driver upgrade is not done (``{node, state, since, seconds, cause, fix, stalled}``)
    from the Node objects ``nodes``, the pods on them, the PodDisruptionBudgets, the upgrade controller's Node events
    (reason ``GPUDriverUpgrade``), the ClusterPolicy ``cp`` (raw, or None: its ``driver.upgradePolicy``) and ``now``
    (epoch s). ``stalled`` says the cluster shows a cause that holds the node; ``fix`` is a command or None."""
    managed = [n for n in nodes if UPGRADE_STATE_LABEL in labels_of(n)]
    policy = ((cp or {}).get("spec") or {}).get("driver", {}).get("upgradePolicy") or {}
    ctx = {"pods": pods, "pdbs": pdbs, "events": events, "policy": policy, "managed": managed}
    ctx["cp_name"] = (name_of(cp) if cp else None) or "<clusterpolicy>"
    out = []
    for node in sorted(managed, key=name_of):
        state = labels_of(node).get(UPGRADE_STATE_LABEL) or ""
        if state in DONE:
            continue
        since, started = _since(node, state, events)
        cause, fix, stalled = _cause(node, state, ctx)
        out.append(
            {
                "node": name_of(node),
                "state": state,
                "since": since,
                "seconds": max(0, int(now - started)) if started is not None else None,
                "cause": cause,
                "fix": fix,
                "stalled": stalled,
            }
        )
    return out


def stall_lines(entries):
    """One line per node of :func:`diagnose` for people: state, for how long, cause, fix."""
    lines = []
    for e in entries:
        how_long = "for %d s (since %s)" % (e["seconds"], e["since"]) if e["since"] else "since an unknown time"
        line = "  %s: %s %s; %s%s" % (e["node"], e["state"], how_long, "stalled: " * e["stalled"], e["cause"])
        lines.append(line + (". Fix: %s" % e["fix"] if e["fix"] else ""))
    return lines


def read_stalls(client, nodes, cp, page_size, now):
    """:func:`diagnose` of the ``nodes`` whose driver upgrade is not done, under the ClusterPolicy ``cp`` (raw, or
    None). ``client`` is a ``_clients.k8s.K8sClient``; it LISTs the pods, the PodDisruptionBudgets and the upgrade
    controller's Node events only when there is such a node: a cluster at rest costs no request."""
    if all(labels_of(n).get(UPGRADE_STATE_LABEL, "") in DONE for n in nodes):
        return []
    pods = client.list_core("pods", page_size=page_size)
    pdbs, _meta = client.list_all(
        "/apis/policy/v1/poddisruptionbudgets", page_size=page_size, what="list poddisruptionbudgets"
    )
    events = client.list_core(
        "events",
        namespace="default",
        field_selector="involvedObject.kind=Node,reason=%s" % EVENT_REASON,
        page_size=page_size,
    )
    return diagnose(nodes, pods, pdbs, events, cp, now)
