# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.


"""GPU triage layers 4-7 for one pod: scheduling, quota and limits, priority and preemption, queues (pure)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.cluster_view import (
    GPU_RESOURCE,
    MIG_RESOURCE_PREFIX,
    is_gpu_node,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.triage.common import (
    DEFAULT_SCHEDULER,
    KUEUE_GROUP,
    KUEUE_QUEUE_LABEL,
    VOLCANO_GROUP_ANNOTATIONS,
    _event_evidence,
    _fmt_res,
    _int,
    _key,
    _meta,
    _name,
    _taint_text,
    finding,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.triage.sched import (
    FILTER_ORDER,
    first_failing_filter,
    is_gpu_resource,
    is_terminal,
    latest_event,
    parse_failed_scheduling,
    pod_requests,
)

# --------------------------------------------------------------------------------------------------
# Layers 4-7 for one pod


_QUOTA_RE = re.compile(r"exceeded quota: ([^,]+), requested: (.*?), used: (.*?), limited: (.*?)$")


def _owner_uids(pod):
    return {r.get("uid") for r in _meta(pod).get("ownerReferences") or [] if r.get("uid")}


def create_failures(events, owner_uids=None):
    """Findings for ``FailedCreate`` events of controllers: ResourceQuota, LimitRange and PriorityClass rejections.

    Only events naming a GPU resource or a PriorityClass count. ``owner_uids`` limits them to those owners.
    """
    latest = {}
    for event in events:
        if event.get("reason") != "FailedCreate":
            continue
        obj = event.get("involvedObject") or {}
        if owner_uids is not None and obj.get("uid") not in owner_uids:
            continue
        message = event.get("message") or ""
        if "nvidia.com/" not in message and "PriorityClass" not in message:
            continue
        key = (obj.get("kind"), obj.get("name"), "quota" if "quota" in message else message[:80])
        if key not in latest or _event_evidence(event)["last_seen"] >= _event_evidence(latest[key])["last_seen"]:
            latest[key] = event
    out = []
    for (kind, name, _unused), event in sorted(latest.items(), key=lambda kv: (kv[0][0] or "", kv[0][1] or "")):
        message = event.get("message") or ""
        obj = event.get("involvedObject") or {}
        subject = "%s %s/%s" % (kind, obj.get("namespace"), name)
        ev = {"event": _event_evidence(event), "object": subject}
        match = _QUOTA_RE.search(message.rstrip())
        if "exceeded quota" in message:
            if match:
                ev.update(quota=match.group(1), requested=match.group(2), used=match.group(3), limited=match.group(4))
            out.append(
                finding(
                    "quota_limits",
                    "QuotaExceeded",
                    "error",
                    "%s cannot create pods: ResourceQuota %s would be exceeded (requested %s, used %s, hard %s)"
                    % (subject, ev.get("quota"), ev.get("requested"), ev.get("used"), ev.get("limited")),
                    "Lower the GPU request, wait for GPU pods in the namespace to finish, or raise the quota's "
                    "requests.nvidia.com/gpu.",
                    ev,
                )
            )
        elif "must specify" in message:
            out.append(
                finding(
                    "quota_limits",
                    "QuotaRequiresRequests",
                    "error",
                    "%s cannot create pods: %s" % (subject, message.split("forbidden: ")[-1]),
                    "Set the resource in every container's requests/limits, or add a LimitRange default.",
                    ev,
                )
            )
        elif "PriorityClass" in message:
            out.append(
                finding(
                    "priority_preemption",
                    "PriorityClassNotFound",
                    "error",
                    "%s cannot create pods: %s" % (subject, message.split("forbidden: ")[-1]),
                    "Create the PriorityClass or fix priorityClassName in the pod template.",
                    ev,
                )
            )
        elif "per Container" in message or "per Pod" in message or "LimitRange" in message:
            out.append(
                finding(
                    "quota_limits",
                    "LimitRangeViolation",
                    "error",
                    "%s cannot create pods: %s" % (subject, message.split("forbidden: ")[-1]),
                    "Request no more (or less) than the namespace's LimitRange allows for nvidia.com/gpu, or change "
                    "the LimitRange.",
                    ev,
                )
            )
    return out


def quota_pressure(quotas, requests=None):
    """Warnings for ResourceQuotas whose GPU entries are used up (new GPU pods would be rejected)."""
    out = []
    for quota in quotas:
        status = quota.get("status") or {}
        hard, used = status.get("hard") or {}, status.get("used") or {}
        for key, limit in sorted(hard.items()):
            resource = key[len("requests.") :] if key.startswith("requests.") else key
            if not is_gpu_resource(resource):
                continue
            want = (requests or {}).get(resource, 1)
            if _int(used.get(key)) + want > _int(limit):
                out.append(
                    finding(
                        "quota_limits",
                        "QuotaFull",
                        "warning",
                        "ResourceQuota %s: %s used %s of %s; another %d would be rejected"
                        % (_name(quota), key, used.get(key, 0), limit, want),
                        "Wait for GPU pods in the namespace to finish or raise the quota.",
                        {"quota": _name(quota), "resource": key, "hard": limit, "used": used.get(key, "0")},
                    )
                )
    return out


def limit_range_evidence(limit_ranges):
    out = []
    for lr in limit_ranges:
        for item in (lr.get("spec") or {}).get("limits") or []:
            picked = {}
            for field in ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio"):
                values = {k: v for k, v in (item.get(field) or {}).items() if is_gpu_resource(k)}
                if values:
                    picked[field] = values
            if picked:
                picked.update(limit_range=_name(lr), type=item.get("type"))
                out.append(picked)
    return out


class PodDiagnosis:
    """Layers for one pod; node-stack findings come from :class:`NodeStack`."""

    def __init__(self, snap, stack, pod):
        self.snap, self.stack, self.pod = snap, stack, pod
        self.spec = pod.get("spec") or {}
        self.status = pod.get("status") or {}
        self.key = _key(pod)
        self.requests = pod_requests(pod)
        uid = _meta(pod).get("uid")
        self.events = [
            e
            for e in snap.events
            if (e.get("involvedObject") or {}).get("kind") == "Pod"
            and (
                (e.get("involvedObject") or {}).get("uid") == uid
                if uid and (e.get("involvedObject") or {}).get("uid")
                else (e.get("involvedObject") or {}).get("name") == _name(pod)
            )
        ]
        self.findings = []
        self.classified = {}
        self.candidates = []

    def add(self, item):
        if self.key not in item["pods"]:
            item = dict(item, pods=sorted(item["pods"] + [self.key]))
        self.findings.append(item)

    def run(self):
        node_name = self.spec.get("nodeName")
        if not self.requests:
            self.add(
                finding(
                    "scheduling",
                    "NoGPURequest",
                    "info",
                    "pod %s requests no nvidia.com/gpu or nvidia.com/mig-* resource" % self.key,
                    "Add resources.limits nvidia.com/gpu to the container if it needs a GPU.",
                )
            )
        if node_name:
            self._bound(node_name)
        else:
            self._pending()
        self._quota()
        return self

    # -- bound pods ------------------------------------------------------------------------------

    def _bound(self, node_name):
        if node_name in self.stack.nodes:
            for item in self.stack.findings(node_name):
                self.add(item)
        if self.status.get("phase") == "Failed":
            reason = self.status.get("reason")
            self.add(
                finding(
                    "device_plugin" if reason == "UnexpectedAdmissionError" else "scheduling",
                    "AdmissionRejected" if reason == "UnexpectedAdmissionError" else "PodFailed",
                    "error",
                    "pod %s failed on %s: %s %s" % (self.key, node_name, reason, self.status.get("message") or ""),
                    "The kubelet could not allocate the devices: the device plugin and the kubelet disagree on "
                    "free GPUs; check the device plugin's log on the node and recreate the pod."
                    if reason == "UnexpectedAdmissionError"
                    else "Read the pod's events and container statuses.",
                    {"reason": reason, "message": self.status.get("message")},
                    nodes=[node_name],
                )
            )

    # -- pending pods ----------------------------------------------------------------------------

    def _pending(self):
        nodes = self.stack.snap.nodes
        for node in nodes:
            name = _name(node)
            self.classified[name] = first_failing_filter(self.pod, node, self.stack.requested.get(name, {}))
        gpu_nodes = [n for n in nodes if self._gpu_node(n)]
        self.candidates = [_name(n) for n in gpu_nodes if self.classified[_name(n)][0] in (None, "resources")]
        # layers 1-3 on the nodes the pod could use; blocking unless a healthy candidate has room
        fits_somewhere = any(
            self.classified[c][0] is None and not [f for f in self.stack.findings(c) if f["severity"] == "error"]
            for c in self.candidates
        )
        for name in self.candidates:
            for item in self.stack.findings(name):
                if item["severity"] == "error" and fits_somewhere:
                    item = dict(item, severity="warning")
                self.add(item)
        gates = [g.get("name") for g in self.spec.get("schedulingGates") or []]
        scheduler = self.spec.get("schedulerName") or DEFAULT_SCHEDULER
        event = latest_event(self.events, "FailedScheduling")
        self.parsed = parse_failed_scheduling((event or {}).get("message")) if event else None
        self.event = _event_evidence(event)
        if not gates and scheduler == DEFAULT_SCHEDULER:
            self._scheduling(gpu_nodes, fits_somewhere)
            self._priority()
        self._queue(gates, scheduler)

    def _gpu_node(self, node):
        alloc = (node.get("status") or {}).get("allocatable") or {}
        return is_gpu_node(node) or any(is_gpu_resource(k) for k in alloc)

    def _scheduling(self, gpu_nodes, fits_somewhere):
        ev = {"scheduler_event": self.event, "scheduler_reasons": (self.parsed or {}).get("reasons")}
        groups = {}
        for node in gpu_nodes:
            name = _name(node)
            kind, detail = self.classified[name]
            if kind is not None:
                groups.setdefault(kind, []).append((name, detail))
        non_gpu = sorted(_name(n) for n in self.stack.snap.nodes if not self._gpu_node(n))
        severity = "info" if fits_somewhere else "error"
        if fits_somewhere:
            self.add(
                finding(
                    "scheduling",
                    "FitsNow",
                    "info",
                    "pod %s: the GPUs it asks for are free on %s now%s"
                    % (
                        self.key,
                        ", ".join(c for c in self.candidates if self.classified[c][0] is None),
                        " (last FailedScheduling: %s)" % self.event["message"] if self.event else "",
                    ),
                    "Wait for the next scheduling attempt; if it stays Pending, check the kube-scheduler.",
                    ev,
                    nodes=[c for c in self.candidates if self.classified[c][0] is None],
                )
            )
        for kind in FILTER_ORDER:
            for item in self._group_findings(kind, groups.get(kind, []), severity, ev):
                self.add(item)
        # scheduler reasons we do not model (cpu, memory, volumes, ports, pod affinity...)
        for reason in (self.parsed or {}).get("reasons") or []:
            if reason["filter"] == "other" or (
                reason["filter"] == "resources" and not is_gpu_resource(reason.get("resource"))
            ):
                self.add(
                    finding(
                        "scheduling",
                        "SchedulerOther",
                        "error",  # a reason we do not model blocks the pod even when its GPUs would fit
                        "scheduler: %d node(s): %s" % (reason["count"], reason["reason"]),
                        "See the scheduler's reason; it is not about GPUs.",
                        ev,
                    )
                )
        if not self.event and not fits_somewhere:
            self.add(
                finding(
                    "scheduling",
                    "NoSchedulerEvent",
                    "warning",
                    "pod %s is Pending and has no FailedScheduling event yet" % self.key,
                    "Retry in a few seconds; if it persists, check that kube-scheduler runs.",
                )
            )
        if non_gpu and self.requests:
            self.add(
                finding(
                    "scheduling",
                    "NodesWithoutGPUs",
                    "info",
                    "%d node(s) have no GPUs: %s" % (len(non_gpu), ", ".join(non_gpu)),
                    None,
                    nodes=non_gpu,
                )
            )

    def _free_gpus(self, name):
        """Free GPU/MIG resources on a node for what this pod asks (allocatable minus requested)."""
        alloc = (self.stack.nodes[name].get("status") or {}).get("allocatable") or {}
        used = self.stack.requested.get(name, {})
        return {res: max(_int(alloc.get(res)) - used.get(res, 0), 0) for res in self.requests if res in alloc}

    def _group_findings(self, kind, members, severity, ev):
        if not members:
            return []
        names = [m[0] for m in members]
        if kind == "unschedulable":
            return [
                finding(
                    "scheduling",
                    "NodeCordoned",
                    severity,
                    "%d GPU node(s) are cordoned (unschedulable): %s" % (len(names), ", ".join(names)),
                    "Uncordon them (kubectl uncordon NODE) once maintenance is over.",
                    ev,
                    nodes=names,
                )
            ]
        if kind == "taint":
            by_key = {}
            for name, detail in members:
                taint = detail["taint"]
                by_key.setdefault((taint["key"], taint.get("value"), taint["effect"]), []).append(name)
            out = []
            for (key, value, effect), nodes in sorted(by_key.items(), key=lambda kv: (-len(kv[1]), kv[0][0] or "")):
                taint = {"key": key, "value": value, "effect": effect}
                free = {n: self._free_gpus(n) for n in nodes}
                out.append(
                    finding(
                        "scheduling",
                        "UntoleratedTaint",
                        severity,
                        "%d GPU node(s) have taint %s that the pod does not tolerate: %s"
                        % (
                            len(nodes),
                            _taint_text(taint),
                            ", ".join("%s (%s free)" % (n, _fmt_res(free[n]) if free[n] else "nothing") for n in nodes),
                        ),
                        "Add a toleration {key: %s, operator: Exists, effect: %s} to the pod, or remove the taint "
                        "(kubectl taint nodes %s %s:%s-)." % (key, effect, " ".join(nodes), key, effect),
                        dict(ev, taint=taint, free=free),
                        nodes=nodes,
                    )
                )
            return out
        if kind == "affinity":
            mismatches = {name: detail["mismatches"] for name, detail in members}
            keys = sorted({"%s %s" % (m["source"], m["key"]) for ms in mismatches.values() for m in ms})
            return [
                finding(
                    "scheduling",
                    "NodeSelectorMismatch",
                    severity,
                    "%d GPU node(s) do not match the pod's %s: %s" % (len(names), ", ".join(keys), ", ".join(names)),
                    "Fix the pod's nodeSelector/affinity, or label the nodes it should run on.",
                    dict(ev, mismatches=mismatches),
                    nodes=names,
                )
            ]
        # resources: MIG naming first, then plain shortage
        out = []
        advertised = {}
        for name in names:
            for res in (self.stack.nodes[name].get("status") or {}).get("allocatable") or {}:
                if is_gpu_resource(res):
                    advertised.setdefault(res, []).append(name)
        shortage = {}
        for name, detail in members:
            for res, amounts in detail["insufficient"].items():
                shortage.setdefault(res, []).append((name, amounts))
        for res, rows in sorted(shortage.items()):
            nodes = [r[0] for r in rows]
            offered = {k: v for k, v in advertised.items() if k != res and any(n in nodes for n in v)}
            if res not in advertised and (res.startswith(MIG_RESOURCE_PREFIX) or offered):
                mig_nodes = {
                    n: {
                        "mig_capable": (self.stack.nodes[n]["metadata"].get("labels") or {}).get(
                            "nvidia.com/mig.capable"
                        ),
                        "mig_config": (self.stack.nodes[n]["metadata"].get("labels") or {}).get(
                            "nvidia.com/mig.config"
                        ),
                        "mig_strategy": (self.stack.nodes[n]["metadata"].get("labels") or {}).get(
                            "nvidia.com/mig.strategy"
                        ),
                    }
                    for n in nodes
                }
                if res == GPU_RESOURCE:
                    msg = "no candidate node advertises nvidia.com/gpu; they advertise %s (MIG mixed strategy)" % (
                        ", ".join(sorted(offered))
                    )
                    fix = "Request one of %s instead of nvidia.com/gpu, or switch the nodes to MIG strategy single." % (
                        ", ".join(sorted(offered))
                    )
                else:
                    msg = "no node advertises %s%s" % (
                        res,
                        "; available: %s" % ", ".join(sorted(offered)) if offered else "",
                    )
                    capable = [n for n, m in mig_nodes.items() if m["mig_capable"] == "true"]
                    fix = (
                        "Request one of the advertised resources, or partition MIG-capable nodes (%s) with "
                        "nvidia.com/mig.config=all-<profile> under MIG strategy mixed." % (", ".join(capable) or "none")
                    )
                out.append(
                    finding(
                        "scheduling",
                        "MIGResourceName",
                        severity,
                        msg,
                        fix,
                        dict(
                            ev,
                            requested=res,
                            advertised={k: sorted(v) for k, v in offered.items()},
                            nodes_mig=mig_nodes,
                        ),
                        nodes=nodes,
                    )
                )
                continue
            detail = {
                n: {
                    "allocatable": _int(((self.stack.nodes[n].get("status") or {}).get("allocatable") or {}).get(res)),
                    "requested": self.stack.requested.get(n, {}).get(res, 0),
                    "free": a["free"],
                }
                for n, a in rows
            }
            zero = [n for n, d in detail.items() if d["allocatable"] == 0]
            best = max(detail.items(), key=lambda kv: kv[1]["free"])
            want = self.requests.get(res, 0)
            message = "Insufficient %s on %d GPU node(s): the pod requests %d, the most free is %d on %s" % (
                res,
                len(rows),
                want,
                best[1]["free"],
                best[0],
            )
            if zero:
                message += "; %s advertise(s) 0 (see the driver/toolkit/device plugin layers)" % ", ".join(sorted(zero))
            out.append(
                finding(
                    "scheduling",
                    "InsufficientGPU",
                    severity,
                    message,
                    "Lower the request to at most %d, wait for GPU pods to finish, or add GPU nodes." % best[1]["free"]
                    if best[1]["free"] > 0
                    else "Wait for GPU pods on these nodes to finish, preempt them with a higher priority, or add "
                    "nodes.",
                    dict(ev, resource=res, per_node=detail),
                    nodes=[r[0] for r in rows],
                )
            )
        return out

    # -- priority --------------------------------------------------------------------------------

    def _priority(self):
        name = self.spec.get("priorityClassName")
        priority = self.spec.get("priority") or 0
        policy = self.spec.get("preemptionPolicy") or "PreemptLowerPriority"
        pc = next((p for p in self.snap.priority_classes if _name(p) == name), None) if name else None
        short_nodes = [c for c in self.candidates if self.classified[c][0] == "resources"]
        ev = {
            "priority_class": name,
            "priority": priority,
            "preemption_policy": policy,
            "priority_class_exists": pc is not None if name else None,
            "scheduler_preemption": (self.parsed or {}).get("preemption"),
            "nominated_node": self.status.get("nominatedNodeName"),
        }
        if self.status.get("nominatedNodeName"):
            self.add(
                finding(
                    "priority_preemption",
                    "PreemptionInProgress",
                    "info",
                    "the scheduler nominated %s for pod %s and is preempting lower-priority pods there"
                    % (self.status["nominatedNodeName"], self.key),
                    "Wait for the victims to terminate.",
                    ev,
                    nodes=[self.status["nominatedNodeName"]],
                )
            )
            return
        if not short_nodes:
            return
        victims, blockers = [], []
        for pod in self.snap.bound_pods:
            node = (pod.get("spec") or {}).get("nodeName")
            if node not in short_nodes or is_terminal(pod) or not pod_requests(pod):
                continue
            entry = {
                "pod": _key(pod),
                "node": node,
                "priority": (pod.get("spec") or {}).get("priority") or 0,
                "gpus": pod_requests(pod),
            }
            (victims if entry["priority"] < priority else blockers).append(entry)
        ev.update(lower_priority_gpu_pods=victims, blocking_gpu_pods=blockers[:20])
        if victims and policy == "Never":
            self.add(
                finding(
                    "priority_preemption",
                    "PreemptionDisabled",
                    "error",
                    "pod %s has preemptionPolicy Never: it will not preempt the %d lower-priority GPU pod(s) on %s"
                    % (self.key, len(victims), ", ".join(sorted({v["node"] for v in victims}))),
                    "Use a PriorityClass with preemptionPolicy PreemptLowerPriority, or wait for GPUs to free up.",
                    ev,
                    nodes=sorted({v["node"] for v in victims}),
                )
            )
        elif not victims:
            self.add(
                finding(
                    "priority_preemption",
                    "PreemptionNotPossible",
                    "warning",
                    "preemption cannot help pod %s (priority %d%s): no GPU pod with a lower priority runs on %s"
                    % (self.key, priority, ", class %s" % name if name else "", ", ".join(short_nodes)),
                    "Give the pod a higher PriorityClass (one with preemptionPolicy PreemptLowerPriority), or wait for "
                    "the GPU pods to finish.",
                    ev,
                    nodes=short_nodes,
                )
            )
        else:
            self.add(
                finding(
                    "priority_preemption",
                    "PreemptionPossible",
                    "info",
                    "%d lower-priority GPU pod(s) could be preempted for pod %s" % (len(victims), self.key),
                    "The scheduler preempts on its next attempt unless PodDisruptionBudgets or other filters "
                    "prevent it.",
                    ev,
                    nodes=sorted({v["node"] for v in victims}),
                )
            )

    # -- quota -----------------------------------------------------------------------------------

    def _quota(self):
        for item in create_failures(self.snap.events, _owner_uids(self.pod)):
            self.add(item)
        if not is_terminal(self.pod) and self.requests:
            for item in quota_pressure(self.snap.quotas):
                self.add(dict(item, severity="info"))

    # -- queues ----------------------------------------------------------------------------------

    def _queue(self, gates, scheduler):
        labels = _meta(self.pod).get("labels") or {}
        kueue_gates = [g for g in gates if g and g.startswith(KUEUE_GROUP)]
        if kueue_gates or KUEUE_QUEUE_LABEL in labels:
            self._kueue(kueue_gates, labels.get(KUEUE_QUEUE_LABEL))
        other = [g for g in gates if g not in kueue_gates]
        if other:
            self.add(
                finding(
                    "queue",
                    "SchedulingGated",
                    "error",
                    "pod %s is held by scheduling gate(s) %s; the scheduler ignores it until they are removed"
                    % (self.key, ", ".join(other)),
                    "Find the controller that owns the gate (its name says which) and why it has not removed it.",
                    {"scheduling_gates": gates},
                )
            )
        if scheduler != DEFAULT_SCHEDULER:
            if scheduler == "volcano":
                self._volcano()
            else:
                self.add(
                    finding(
                        "scheduling",
                        "CustomScheduler",
                        "warning",
                        "pod %s uses schedulerName %s: the default scheduler's events do not apply"
                        % (self.key, scheduler),
                        "Check that scheduler %s runs and read its events for the pod." % scheduler,
                        {"scheduler_name": scheduler},
                    )
                )

    def _kueue(self, gates, queue_name):
        kueue = self.snap.kueue
        ns = _meta(self.pod).get("namespace")
        ev = {"local_queue": queue_name, "scheduling_gates": gates}
        if kueue is None:
            self.add(
                finding(
                    "queue",
                    "KueueNotInstalled",
                    "error",
                    "pod %s waits for Kueue (%s) but the kueue.x-k8s.io API is not served"
                    % (self.key, ", ".join(gates) or "queue-name label"),
                    "Install Kueue, or remove the gate/label from the pod.",
                    ev,
                )
            )
            return
        workload = self._workload(kueue.get("workloads") or [])
        if workload is not None:
            ev["workload"] = {
                "name": _name(workload),
                "conditions": [
                    {k: c.get(k) for k in ("type", "status", "reason", "message")}
                    for c in (workload.get("status") or {}).get("conditions") or []
                ],
            }
        lq = next((q for q in kueue.get("localqueues") or [] if _name(q) == queue_name), None)
        if queue_name and lq is None:
            self.add(
                finding(
                    "queue",
                    "KueueLocalQueueNotFound",
                    "error",
                    "LocalQueue %s/%s named by pod %s does not exist" % (ns, queue_name, self.key),
                    "Create the LocalQueue in namespace %s or fix the %s label." % (ns, KUEUE_QUEUE_LABEL),
                    ev,
                )
            )
            return
        if lq is None:
            return
        cq_name = (lq.get("spec") or {}).get("clusterQueue")
        ev["cluster_queue"] = cq_name
        cq = next((q for q in kueue.get("clusterqueues") or [] if _name(q) == cq_name), None)
        if cq is None:
            self.add(
                finding(
                    "queue",
                    "KueueClusterQueueNotFound",
                    "error",
                    "LocalQueue %s/%s points at ClusterQueue %s, which does not exist" % (ns, queue_name, cq_name),
                    "Create the ClusterQueue or point the LocalQueue at an existing one.",
                    ev,
                )
            )
            return
        status = cq.get("status") or {}
        active = next((c for c in status.get("conditions") or [] if c.get("type") == "Active"), None)
        ev["pending_workloads"] = status.get("pendingWorkloads")
        if (active and active.get("status") == "False") or (cq.get("spec") or {}).get("stopPolicy") in (
            "Hold",
            "HoldAndDrain",
        ):
            self.add(
                finding(
                    "queue",
                    "KueueClusterQueueInactive",
                    "error",
                    "ClusterQueue %s is not active%s"
                    % (cq_name, ": %s" % active.get("message") if active else " (stopPolicy)"),
                    "Fix what the ClusterQueue's Active condition names (missing ResourceFlavor, stopPolicy).",
                    ev,
                )
            )
            return
        blocked = False
        for res, want in sorted(self.requests.items()):
            nominal = 0
            covered = False
            for group in (cq.get("spec") or {}).get("resourceGroups") or []:
                for flavor in group.get("flavors") or []:
                    for entry in flavor.get("resources") or []:
                        if entry.get("name") == res:
                            covered = True
                            nominal += _int(entry.get("nominalQuota"))
            used = 0
            for field in ("flavorsReservation", "flavorsUsage"):
                rows = status.get(field)
                if rows:
                    used = sum(
                        _int(r.get("total")) for f in rows for r in f.get("resources") or [] if r.get("name") == res
                    )
                    break
            ev.setdefault("quota", {})[res] = {"nominal": nominal, "reserved": used, "requested": want}
            if not covered:
                blocked = True
                self.add(
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
                blocked = True
                self.add(
                    finding(
                        "queue",
                        "KueueQuotaExhausted",
                        "error",
                        "ClusterQueue %s: %s nominal quota %d, %d reserved, the pod needs %d more "
                        "(%s pending workloads)"
                        % (cq_name, res, nominal, used, want, status.get("pendingWorkloads", "?")),
                        "Wait for admitted workloads to finish, raise the nominalQuota, or allow borrowing from a "
                        "cohort.",
                        ev,
                    )
                )
        if not blocked and gates:
            message = None
            for cond in (ev.get("workload") or {}).get("conditions") or []:
                if cond.get("type") == "QuotaReserved" and cond.get("status") == "False":
                    message = cond.get("message")
            self.add(
                finding(
                    "queue",
                    "KueueNotAdmitted",
                    "error" if message else "warning",
                    "pod %s is not yet admitted by Kueue%s" % (self.key, ": %s" % message if message else ""),
                    "Check the kueue-controller-manager and the Workload's conditions (kubectl describe workload).",
                    ev,
                )
            )

    def _workload(self, workloads):
        uids = _owner_uids(self.pod) | {_meta(self.pod).get("uid")}
        for wl in workloads:
            if any(r.get("uid") in uids for r in _meta(wl).get("ownerReferences") or []):
                return wl
        return None

    def _volcano(self):
        volcano = self.snap.volcano
        ann = _meta(self.pod).get("annotations") or {}
        group = next((ann[a] for a in VOLCANO_GROUP_ANNOTATIONS if ann.get(a)), None)
        ns = _meta(self.pod).get("namespace")
        ev = {"scheduler_name": "volcano", "pod_group": group}
        if volcano is None:
            self.add(
                finding(
                    "queue",
                    "VolcanoNotInstalled",
                    "error",
                    "pod %s uses schedulerName volcano but the scheduling.volcano.sh API is not served" % self.key,
                    "Install Volcano or use the default scheduler.",
                    ev,
                )
            )
            return
        pg = next((g for g in volcano.get("podgroups") or [] if _name(g) == group), None) if group else None
        if group and pg is None:
            self.add(
                finding(
                    "queue",
                    "VolcanoPodGroupNotFound",
                    "error",
                    "PodGroup %s/%s named by pod %s does not exist" % (ns, group, self.key),
                    "Create the PodGroup (Volcano Jobs do this themselves) or fix the group-name annotation.",
                    ev,
                )
            )
            return
        queue_name = ((pg or {}).get("spec") or {}).get("queue") or "default"
        ev["queue"] = queue_name
        if pg is not None:
            pst = pg.get("status") or {}
            ev["pod_group_phase"] = pst.get("phase")
            ev["pod_group_conditions"] = [
                {k: c.get(k) for k in ("type", "status", "reason", "message")} for c in pst.get("conditions") or []
            ]
        queue = next((q for q in volcano.get("queues") or [] if _name(q) == queue_name), None)
        if queue is None:
            self.add(
                finding(
                    "queue",
                    "VolcanoQueueNotFound",
                    "error",
                    "Volcano queue %s does not exist" % queue_name,
                    "Create the queue or set the PodGroup's spec.queue to an existing one.",
                    ev,
                )
            )
            return
        qstatus = queue.get("status") or {}
        ev["queue_state"] = qstatus.get("state")
        ev["queue_capability"] = {
            k: v for k, v in ((queue.get("spec") or {}).get("capability") or {}).items() if is_gpu_resource(k)
        }
        ev["queue_allocated"] = {k: v for k, v in (qstatus.get("allocated") or {}).items() if is_gpu_resource(k)}
        if qstatus.get("state") and qstatus.get("state") != "Open":
            self.add(
                finding(
                    "queue",
                    "VolcanoQueueClosed",
                    "error",
                    "Volcano queue %s is %s: it admits no new PodGroups" % (queue_name, qstatus.get("state")),
                    "Open the queue (vcctl queue operate --name %s --action open) or use another queue." % queue_name,
                    ev,
                )
            )
            return
        for res, want in sorted(self.requests.items()):
            cap = ev["queue_capability"].get(res)
            if cap is None:
                continue
            used = _int(ev["queue_allocated"].get(res))
            if used + want > _int(cap):
                self.add(
                    finding(
                        "queue",
                        "VolcanoQueueCapability",
                        "error",
                        "Volcano queue %s: %s capability %s, %d allocated, the pod needs %d"
                        % (queue_name, res, cap, used, want),
                        "Raise the queue's capability or wait for its jobs to finish.",
                        ev,
                    )
                )
                return
        for cond in ev.get("pod_group_conditions") or []:
            if cond.get("type") == "Unschedulable" and cond.get("status") == "True":
                self.add(
                    finding(
                        "queue",
                        "VolcanoPodGroupUnschedulable",
                        "error",
                        "PodGroup %s is unschedulable: %s" % (group, cond.get("message")),
                        "Read the volcano scheduler's reason above.",
                        ev,
                    )
                )
