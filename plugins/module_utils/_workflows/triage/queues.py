# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""GPU triage, ``queue`` layer: scheduling gates, Kueue (LocalQueue, ClusterQueue, Workload) and Volcano (PodGroup,
Queue), plus a pod handed to another scheduler (pure)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import (
    annotations_of,
    key_of,
    labels_of,
    meta_of,
    name_of,
    namespace_of,
    to_int,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.triage.admission import owner_uids
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.triage.common import (
    DEFAULT_SCHEDULER,
    KUEUE_GROUP,
    KUEUE_QUEUE_LABEL,
    VOLCANO_GROUP_ANNOTATIONS,
    finding,
    named,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.triage.sched import is_gpu_resource


def _conditions(obj):
    return [
        {k: c.get(k) for k in ("type", "status", "reason", "message")}
        for c in (obj.get("status") or {}).get("conditions") or []
    ]


def _blocked(reason, message, fix, ev):
    """The one error finding of the ``queue`` layer that stops the walk."""
    return [finding("queue", reason, "error", message, fix, ev)]


def queue_findings(snap, pod, requests, gates, scheduler):
    """Findings for a Pending ``pod`` held by scheduling ``gates``, a Kueue queue, or a ``scheduler`` other than
    the default one (Volcano checked, any other named)."""
    out = []
    labels = labels_of(pod)
    kueue_gates = [g for g in gates if g and g.startswith(KUEUE_GROUP)]
    if kueue_gates or KUEUE_QUEUE_LABEL in labels:
        out.extend(kueue_findings(snap.kueue, pod, requests, kueue_gates, labels.get(KUEUE_QUEUE_LABEL)))
    other = [g for g in gates if g not in kueue_gates]
    if other:
        out.append(
            finding(
                "queue",
                "SchedulingGated",
                "error",
                "pod %s is held by scheduling gate(s) %s; the scheduler ignores it until they are removed"
                % (key_of(pod), ", ".join(other)),
                "Find the controller that owns the gate (its name says which) and why it has not removed it.",
                {"scheduling_gates": gates},
            )
        )
    if scheduler == "volcano":
        out.extend(volcano_findings(snap.volcano, pod, requests))
    elif scheduler != DEFAULT_SCHEDULER:
        out.append(
            finding(
                "scheduling",
                "CustomScheduler",
                "warning",
                "pod %s uses schedulerName %s: the default scheduler's events do not apply" % (key_of(pod), scheduler),
                "Check that scheduler %s runs and read its events for the pod." % scheduler,
                {"scheduler_name": scheduler},
            )
        )
    return out


# -- Kueue ---------------------------------------------------------------------------------------------


def kueue_findings(kueue, pod, requests, gates, queue_name):
    """Why Kueue has not admitted ``pod``: no Kueue, a missing or inactive queue, no quota left, not admitted."""
    key, ns = key_of(pod), namespace_of(pod)
    ev = {"local_queue": queue_name, "scheduling_gates": gates}
    if kueue is None:
        return _blocked(
            "KueueNotInstalled",
            "pod %s waits for Kueue (%s) but the kueue.x-k8s.io API is not served"
            % (key, ", ".join(gates) or "queue-name label"),
            "Install Kueue, or remove the gate/label from the pod.",
            ev,
        )
    workload = _workload(pod, kueue.get("workloads") or [])
    if workload is not None:
        ev["workload"] = {"name": name_of(workload), "conditions": _conditions(workload)}
    lq = named(kueue.get("localqueues"), queue_name)
    if queue_name and lq is None:
        return _blocked(
            "KueueLocalQueueNotFound",
            "LocalQueue %s/%s named by pod %s does not exist" % (ns, queue_name, key),
            "Create the LocalQueue in namespace %s or fix the %s label." % (ns, KUEUE_QUEUE_LABEL),
            ev,
        )
    if lq is None:
        return []
    cq_name = (lq.get("spec") or {}).get("clusterQueue")
    ev["cluster_queue"] = cq_name
    cq = named(kueue.get("clusterqueues"), cq_name)
    if cq is None:
        return _blocked(
            "KueueClusterQueueNotFound",
            "LocalQueue %s/%s points at ClusterQueue %s, which does not exist" % (ns, queue_name, cq_name),
            "Create the ClusterQueue or point the LocalQueue at an existing one.",
            ev,
        )
    status = cq.get("status") or {}
    active = next((c for c in status.get("conditions") or [] if c.get("type") == "Active"), None)
    ev["pending_workloads"] = status.get("pendingWorkloads")
    if (active and active.get("status") == "False") or (cq.get("spec") or {}).get("stopPolicy") in (
        "Hold",
        "HoldAndDrain",
    ):
        return _blocked(
            "KueueClusterQueueInactive",
            "ClusterQueue %s is not active%s"
            % (cq_name, ": %s" % active.get("message") if active else " (stopPolicy)"),
            "Fix what the ClusterQueue's Active condition names (missing ResourceFlavor, stopPolicy).",
            ev,
        )
    out = _kueue_quota(cq, requests, ev)
    if not out and gates:
        message = None
        for cond in (ev.get("workload") or {}).get("conditions") or []:
            if cond.get("type") == "QuotaReserved" and cond.get("status") == "False":
                message = cond.get("message")
        out.append(
            finding(
                "queue",
                "KueueNotAdmitted",
                "error" if message else "warning",
                "pod %s is not yet admitted by Kueue%s" % (key, ": %s" % message if message else ""),
                "Check the kueue-controller-manager and the Workload's conditions (kubectl describe workload).",
                ev,
            )
        )
    return out


def _kueue_quota(cq, requests, ev):
    """Findings for the requested resources the ClusterQueue ``cq`` does not cover or has no nominal quota left
    for; ``ev`` (shared by the findings) gets each resource's nominal, reserved and requested amounts."""
    cq_name, status = name_of(cq), cq.get("status") or {}
    out = []
    for res, want in sorted(requests.items()):
        nominal = 0
        covered = False
        for group in (cq.get("spec") or {}).get("resourceGroups") or []:
            for flavor in group.get("flavors") or []:
                for entry in flavor.get("resources") or []:
                    if entry.get("name") == res:
                        covered = True
                        nominal += to_int(entry.get("nominalQuota"))
        used = 0
        for field in ("flavorsReservation", "flavorsUsage"):
            rows = status.get(field)
            if rows:
                used = sum(
                    to_int(r.get("total")) for f in rows for r in f.get("resources") or [] if r.get("name") == res
                )
                break
        ev.setdefault("quota", {})[res] = {"nominal": nominal, "reserved": used, "requested": want}
        if not covered:
            out.append(
                finding(
                    "queue",
                    "KueueResourceNotCovered",
                    "error",
                    "ClusterQueue %s has no quota for %s, so the workload can never be admitted" % (cq_name, res),
                    "Add %s to the ClusterQueue's coveredResources and a flavor's resources." % res,
                    ev,
                )
            )
        elif used + want > nominal:
            out.append(
                finding(
                    "queue",
                    "KueueQuotaExhausted",
                    "error",
                    "ClusterQueue %s: %s nominal quota %d, %d reserved, the pod needs %d more (%s pending workloads)"
                    % (cq_name, res, nominal, used, want, status.get("pendingWorkloads", "?")),
                    "Wait for admitted workloads to finish, raise the nominalQuota, or allow borrowing from a cohort.",
                    ev,
                )
            )
    return out


def _workload(pod, workloads):
    """The Kueue Workload owned by ``pod`` or by its owner, or None."""
    uids = owner_uids(pod) | {meta_of(pod).get("uid")}
    for wl in workloads:
        if any(r.get("uid") in uids for r in meta_of(wl).get("ownerReferences") or []):
            return wl
    return None


# -- Volcano -------------------------------------------------------------------------------------------


def volcano_findings(volcano, pod, requests):
    """Why Volcano has not scheduled ``pod``: no Volcano, a missing PodGroup or queue, a closed or full queue, an
    unschedulable PodGroup."""
    group = next((v for v in (annotations_of(pod).get(a) for a in VOLCANO_GROUP_ANNOTATIONS) if v), None)
    ev = {"scheduler_name": "volcano", "pod_group": group}
    if volcano is None:
        return _blocked(
            "VolcanoNotInstalled",
            "pod %s uses schedulerName volcano but the scheduling.volcano.sh API is not served" % key_of(pod),
            "Install Volcano or use the default scheduler.",
            ev,
        )
    pg = named(volcano.get("podgroups"), group) if group else None
    if group and pg is None:
        return _blocked(
            "VolcanoPodGroupNotFound",
            "PodGroup %s/%s named by pod %s does not exist" % (namespace_of(pod), group, key_of(pod)),
            "Create the PodGroup (Volcano Jobs do this themselves) or fix the group-name annotation.",
            ev,
        )
    queue_name = ((pg or {}).get("spec") or {}).get("queue") or "default"
    ev["queue"] = queue_name
    if pg is not None:
        ev["pod_group_phase"] = (pg.get("status") or {}).get("phase")
        ev["pod_group_conditions"] = _conditions(pg)
    queue = named(volcano.get("queues"), queue_name)
    if queue is None:
        return _blocked(
            "VolcanoQueueNotFound",
            "Volcano queue %s does not exist" % queue_name,
            "Create the queue or set the PodGroup's spec.queue to an existing one.",
            ev,
        )
    return _volcano_queue(queue, requests, group, ev)


def _volcano_queue(queue, requests, group, ev):
    """Findings for a Volcano ``queue`` that is closed or lacks the capability the pod requests, then for an
    unschedulable PodGroup ``group``; ``ev`` gets the queue's state, capability and allocation."""
    queue_name, qstatus = name_of(queue), queue.get("status") or {}
    ev["queue_state"] = qstatus.get("state")
    ev["queue_capability"] = {
        k: v for k, v in ((queue.get("spec") or {}).get("capability") or {}).items() if is_gpu_resource(k)
    }
    ev["queue_allocated"] = {k: v for k, v in (qstatus.get("allocated") or {}).items() if is_gpu_resource(k)}
    if qstatus.get("state") and qstatus.get("state") != "Open":
        return _blocked(
            "VolcanoQueueClosed",
            "Volcano queue %s is %s: it admits no new PodGroups" % (queue_name, qstatus.get("state")),
            "Open the queue (vcctl queue operate --name %s --action open) or use another queue." % queue_name,
            ev,
        )
    for res, want in sorted(requests.items()):
        cap = ev["queue_capability"].get(res)
        if cap is None:
            continue
        used = to_int(ev["queue_allocated"].get(res))
        if used + want > to_int(cap):
            return _blocked(
                "VolcanoQueueCapability",
                "Volcano queue %s: %s capability %s, %d allocated, the pod needs %d"
                % (queue_name, res, cap, used, want),
                "Raise the queue's capability or wait for its jobs to finish.",
                ev,
            )
    return [
        finding(
            "queue",
            "VolcanoPodGroupUnschedulable",
            "error",
            "PodGroup %s is unschedulable: %s" % (group, cond.get("message")),
            "Read the volcano scheduler's reason above.",
            ev,
        )
        for cond in ev.get("pod_group_conditions") or []
        if cond.get("type") == "Unschedulable" and cond.get("status") == "True"
    ]
