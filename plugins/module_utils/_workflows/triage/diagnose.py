# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""GPU triage: why a GPU pod is Pending (or failed), layer by layer, with evidence from the API.

The walk, in order (:data:`LAYERS`):

1. ``driver``: the node is Ready, its GPUs are present, the driver pod is Ready (CrashLoopBackOff with the
   reason and message of its last termination and the tail of its log);
2. ``toolkit``: the container toolkit pod, the ``nvidia`` runtime (``FailedCreatePodSandBox``), the
   operator validator;
3. ``device-plugin``: the device plugin pod and what the node advertises (capacity, allocatable, requested), on
   nodes that use it;
4. ``dra``: the DRA driver's kubelet plugin, the node's ResourceSlices and pool generation, device taints; a pod's
   claims (made from their template, the DeviceClass, tainted devices, prepared by the kubelet);
5. ``scheduling``: the kube-scheduler's ``FailedScheduling`` event parsed per reason, checked against our own
   evaluation of every node in the scheduler's filter order (cordon, untolerated taint with its key, node
   selector/affinity, then GPU and MIG resources, then the devices a pod's claims ask for);
6. ``quota``: ResourceQuota on ``requests.nvidia.com/gpu`` and LimitRange, from the namespace's
   ``FailedCreate`` events (a rejected pod never exists) and the quota's used/hard;
7. ``preemption``: the pod's PriorityClass, preemption policy, and whether lower-priority GPU pods
   exist that could be preempted;
8. ``queue``: scheduling gates, Kueue (LocalQueue, ClusterQueue, Workload) and Volcano (PodGroup, Queue),
   only when their API groups are served.

:class:`Snapshot` holds what a handful of LISTs returned; :func:`diagnose` is pure and turns it into the
result; :class:`Triage` does the reading. A finding is a dict with ``layer``, ``reason`` (a stable CamelCase
code), ``severity`` (``error`` blocks the pod, ``warning``, ``info``), ``message``, ``fix``, ``evidence``,
``nodes`` and ``pods``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

try:
    from urllib.parse import quote
except ImportError:  # pragma: no cover - Python 2 is not supported
    from urllib import quote  # type: ignore

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.k8s import K8sError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.operator_names import (
    find_names,
    list_drivers,
    list_policies,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import name_of, namespace_of
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.operand_judgement import (
    CRASH_REASONS,
    IMAGE_REASONS,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.triage.admission import (
    create_failures,
    limit_range_evidence,
    quota_pressure,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.triage.common import (
    DEFAULT_SCHEDULER,
    KUEUE_GROUP,
    LAYERS,
    NODE_LAYERS,
    SEVERITIES,
    VOLCANO_GROUP,
    Snapshot,
    finding,
    format_requests,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.triage.dra import read_dra
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.triage.pod import PodDiagnosis
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.triage.sched import (
    is_terminal,
    pod_requests,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.triage.stack import (
    NodeStack,
    container_failure,
    node_scheduling,
)

# --------------------------------------------------------------------------------------------------
# Assembling the result


def first_failing(findings):
    errors = [LAYERS.index(f["layer"]) for f in findings if f["severity"] == "error"]
    return LAYERS[min(errors)] if errors else None


def _sort(findings):
    return sorted(
        findings, key=lambda f: (LAYERS.index(f["layer"]), SEVERITIES.index(f["severity"]))
    )  # stable: keeps the walk's order inside one layer and severity


def layer_table(findings, applicable):
    out = []
    for layer in LAYERS:
        mine = [f for f in findings if f["layer"] == layer]
        if any(f["severity"] == "error" for f in mine):
            status = "failed"
        elif any(f["severity"] == "warning" for f in mine):
            status = "warning"
        elif layer in applicable:
            status = "ok"
        else:
            status = "skipped"
        out.append({"name": layer, "status": status, "findings": len(mine)})
    return out


def _merge(findings):
    """Deduplicate findings shared by several pods (a broken node), keeping the worst severity and all pods."""
    merged = {}
    order = []
    for item in findings:
        key = (item["layer"], item["reason"], tuple(item["nodes"]), item["message"])
        if key not in merged:
            merged[key] = dict(item)
            order.append(key)
        else:
            cur = merged[key]
            cur["pods"] = sorted(set(cur["pods"]) | set(item["pods"]))
            if SEVERITIES.index(item["severity"]) < SEVERITIES.index(cur["severity"]):
                cur["severity"] = item["severity"]
    return _sort([merged[k] for k in order])


def _summary_lines(target, pods, findings, first):
    lines = []
    label = {"pod": "pod %s/%s", "namespace": "namespace %s%s", "node": "node %s%s"}[target["kind"]]
    subject = label % (
        (target["namespace"], target["name"])
        if target["kind"] == "pod"
        else (target["name"] or target["namespace"], "")
    )
    if target["kind"] == "pod" and pods and pods[0]["phase"]:
        subject += " (%s, %s)" % (pods[0]["phase"], _asks(pods[0]))
    lines.append("%s: %s" % (subject, "first failing layer: %s" % first if first else "no blocking problem found"))
    for pod in pods:
        if target["kind"] != "pod":
            lines.append(
                "pod %s/%s (%s, %s): %s"
                % (
                    pod["namespace"],
                    pod["name"],
                    pod["phase"],
                    _asks(pod),
                    pod["first_failing_layer"] or "ok",
                )
            )
    for item in findings:
        if item["severity"] == "info" and item["reason"] in ("NodesWithoutGPUs", "NoClusterPolicy"):
            continue
        lines.append("[%s] %s %s: %s" % (item["layer"], item["severity"], item["reason"], item["message"]))
        if item["fix"] and item["severity"] != "info":
            lines.append("    fix: %s" % item["fix"])
    return lines


def _asks(pod):
    """What a pod asks for, for the summary: its GPU requests, else its claims."""
    if pod["claims"] and not pod["gpu_requests"]:
        return "claims %s" % ", ".join("%s (%s)" % (c["name"], c["status"]) for c in pod["claims"])
    return format_requests(pod["gpu_requests"])


def _node_summary(view):
    dra = view["dra"]
    return {
        "name": view["name"],
        "mode": view["mode"],
        "dra": dict(
            {k: dra[k] for k in ("plugin_pod", "plugin_ready", "pools", "problems")},
            **{k: dra["devices_" + k] for k in ("total", "allocated", "free", "tainted")},
        ),
        "ready": view["ready"],
        "unschedulable": view["unschedulable"],
        "taints": view["taints"],
        "gpu": {k: view["gpu"][k] for k in ("present", "product", "count")},
        "capacity": view["capacity"],
        "allocatable": view["allocatable"],
        "requested": view["requested"],
        "operands": {
            c: {k: s[k] for k in ("name", "phase", "ready", "restarts", "waiting_reason")}
            for c, s in view["operands"].items()
        },
    }


def diagnose(snap, target):
    """The triage result for ``target`` (``{"kind": "pod"|"namespace"|"node", "namespace", "name"}``)."""
    stack = NodeStack(snap)
    findings, pods, examined = [], [], set()
    applicable = set(NODE_LAYERS)
    if stack.gpu_dra.by_node or any((p.get("spec") or {}).get("resourceClaims") for p in snap.targets):
        applicable.add("dra")
    if target["kind"] == "node":
        name = target["name"]
        findings.extend(stack.findings(name))
        examined.add(name)
        view = stack.view(name)
        if view["dra"]["expected"]:
            applicable.add("dra")
        findings.extend(node_scheduling(view))
    else:
        applicable |= {"scheduling", "quota", "preemption"}
        if snap.kueue is not None or snap.volcano is not None:
            applicable.add("queue")
        for pod in snap.targets:
            diag = PodDiagnosis(snap, stack, pod).run()
            examined.update(diag.candidates)
            if diag.spec.get("nodeName"):
                examined.add(diag.spec["nodeName"])
            mine = _merge(diag.findings)
            pods.append(
                {
                    "namespace": namespace_of(pod),
                    "name": name_of(pod),
                    "phase": diag.status.get("phase"),
                    "node": diag.spec.get("nodeName"),
                    "gpu_requests": diag.requests,
                    "claims": diag.claims.summary() if diag.claims else [],
                    "scheduler_name": diag.spec.get("schedulerName") or DEFAULT_SCHEDULER,
                    "priority_class": diag.spec.get("priorityClassName"),
                    "priority": diag.spec.get("priority") or 0,
                    "scheduling_gates": [g.get("name") for g in diag.spec.get("schedulingGates") or []],
                    "scheduler_event": diag.parsed,
                    "first_failing_layer": first_failing(mine),
                    "findings": mine,
                }
            )
            findings.extend(diag.findings)
        if target["kind"] == "namespace" or (target["kind"] == "pod" and not snap.targets):
            findings.extend(create_failures(snap.events))
            findings.extend(quota_pressure(snap.quotas))
        if snap.namespace_exists is False:
            findings.append(
                finding(
                    "scheduling",
                    "NamespaceNotFound",
                    "error",
                    "namespace %s does not exist, so neither does any pod in it" % target["namespace"],
                    "Check the name: kubectl get namespaces lists those that exist.",
                )
            )
        elif target["kind"] == "pod" and not snap.targets:
            findings.append(
                finding(
                    "scheduling",
                    "PodNotFound",
                    "error"
                    if not any(f["layer"] == "quota" and f["severity"] == "error" for f in findings)
                    else "info",
                    "pod %s/%s does not exist" % (target["namespace"], target["name"]),
                    "Check the name; a pod rejected at creation (quota, LimitRange) never exists: see the "
                    "quota findings and the owner's FailedCreate events.",
                )
            )
    merged = _merge(findings)
    first = first_failing(merged)
    lines = _summary_lines(target, pods, merged, first)
    return {
        "target": target,
        "first_failing_layer": first,
        "layers": layer_table(merged, applicable),
        "findings": merged,
        "pods": pods,
        "nodes": {n: _node_summary(stack.view(n)) for n in sorted(examined) if n in stack.nodes},
        "limit_ranges": limit_range_evidence(snap.limit_ranges),
        "queue_apis": {KUEUE_GROUP: snap.kueue is not None, VOLCANO_GROUP: snap.volcano is not None},
        "summary": "\n".join(lines),
        "summary_lines": lines,
    }


# --------------------------------------------------------------------------------------------------
# Reading


def wanted_pod(pod):
    """A pod worth a namespace-wide triage: it asks for GPUs (or uses DRA claims) and is Pending, Failed or
    crash-looping."""
    if not pod_requests(pod) and not (pod.get("spec") or {}).get("resourceClaims"):
        return False
    status = pod.get("status") or {}
    if status.get("phase") in ("Pending", "Failed"):
        return True
    return any(
        ((cs.get("state") or {}).get("waiting") or {}).get("reason") in CRASH_REASONS + IMAGE_REASONS
        for cs in status.get("containerStatuses") or []
    )


class Triage:
    """Reads what :func:`diagnose` needs with a handful of paginated LISTs (plus a few log reads).

    ``client`` is a ``_k8s.K8sClient``. ``max_logs`` bounds the log reads (crash-looping driver and validator pods
    on the nodes examined).
    """

    def __init__(self, client, operator_namespace=None, page_size=500, log_lines=20, max_logs=5, cluster_policy=None):
        self.client = client
        self.operator_namespace = operator_namespace  # None: discovered by the first read (``names``)
        self.cluster_policy = cluster_policy
        self.names = None
        self.page_size = page_size
        self.log_lines = log_lines
        self.max_logs = max_logs

    def _list(self, resource, namespace=None, **kwargs):
        return self.client.list_core(resource, namespace=namespace, page_size=self.page_size, **kwargs)

    def _group(self, group):
        """The preferred version of an API group, or None when the cluster does not serve it."""
        try:
            data = self.client.get("/apis/%s" % group, what="discover API group %s" % group)
        except K8sError as exc:
            if exc.status == 404:
                return None
            raise
        return ((data or {}).get("preferredVersion") or {}).get("version")

    def _queues(self, namespace):
        kueue = volcano = None
        version = self._group(KUEUE_GROUP)
        if version:
            kueue = {
                "version": version,
                "clusterqueues": self.client.list_custom(
                    KUEUE_GROUP, version, "clusterqueues", page_size=self.page_size
                )
                or [],
                "localqueues": self.client.list_custom(
                    KUEUE_GROUP, version, "localqueues", namespace=namespace, page_size=self.page_size
                )
                or [],
                "workloads": self.client.list_custom(
                    KUEUE_GROUP, version, "workloads", namespace=namespace, page_size=self.page_size
                )
                or [],
            }
        version = self._group(VOLCANO_GROUP)
        if version:
            volcano = {
                "version": version,
                "queues": self.client.list_custom(VOLCANO_GROUP, version, "queues", page_size=self.page_size) or [],
                "podgroups": self.client.list_custom(
                    VOLCANO_GROUP, version, "podgroups", namespace=namespace, page_size=self.page_size
                )
                or [],
            }
        return kueue, volcano

    def _common(self, node_field=None):
        policies = list_policies(self.client, self.page_size)
        self.names = find_names(
            self.client,
            policies,
            list_drivers(self.client, self.page_size),
            self.operator_namespace,
            self.cluster_policy,
            self.page_size,
        )
        ns = self.operator_namespace = self.names.namespace
        field = "spec.nodeName=%s" % node_field if node_field else None
        return {
            "operator_pods": self._list("pods", namespace=ns, field_selector=field),
            "operator_events": self._list("events", namespace=ns, field_selector="involvedObject.kind=Pod"),
            # the one in use only, so that the view shows the one the names found
            "cluster_policies": [self.names.policy] if self.names.policy else policies,
            "gpu_cluster": self.names.gpu_cluster,
            "operator_namespace": ns,
            "log_lines": self.log_lines,
        }

    def read_pods(self, namespace, name=None):
        data = self._common()
        if name:
            try:
                targets = [
                    self.client.get(
                        "/api/v1/namespaces/%s/pods/%s" % (quote(namespace, safe=""), quote(name, safe="")),
                        what="read pod %s/%s" % (namespace, name),
                    )
                ]
            except K8sError as exc:
                if exc.status != 404:
                    raise
                targets = []
        else:
            targets = [p for p in self._list("pods", namespace=namespace) if wanted_pod(p)]
        data.update(
            nodes=self._list("nodes"),
            bound_pods=[
                p
                for p in self._list("pods", field_selector="status.phase!=Succeeded,status.phase!=Failed")
                if (p.get("spec") or {}).get("nodeName")
            ],
            targets=targets,
            events=self._list("events", namespace=namespace),
            quotas=self._list("resourcequotas", namespace=namespace),
            limit_ranges=self._list("limitranges", namespace=namespace),
            priority_classes=self.client.list_all(
                "/apis/scheduling.k8s.io/v1/priorityclasses", page_size=self.page_size, what="list priorityclasses"
            )[0],
        )
        if not targets:  # no pod: say whether the namespace itself is missing (None: not readable)
            data["namespace_exists"] = self._namespace_exists(namespace)
        data["kueue"], data["volcano"] = self._queues(namespace)
        data.update(read_dra(self.client, namespace=namespace, page_size=self.page_size))
        return self._with_logs(Snapshot(**data))

    def _namespace_exists(self, namespace):
        try:
            self.client.get("/api/v1/namespaces/%s" % quote(namespace, safe=""), what="read namespace %s" % namespace)
        except K8sError as exc:
            return False if exc.status == 404 else None
        return True

    def read_node(self, name, nvml=None):
        """The snapshot of node ``name``; ``nvml``: its host's NVML facts (``nvidia_gpu_facts``), when known."""
        node = self.client.get("/api/v1/nodes/%s" % quote(name, safe=""), what="read node %s" % name)
        data = self._common(node_field=name)
        data.update(
            nodes=[node],
            bound_pods=[p for p in self._list("pods", field_selector="spec.nodeName=%s" % name) if not is_terminal(p)],
            node_events=self._list(
                "events", namespace="default", field_selector="involvedObject.kind=Node,involvedObject.name=%s" % name
            ),
        )
        data.update(read_dra(self.client, node=name, page_size=self.page_size))
        if nvml is not None:
            data["nvml"] = {name: nvml}
        return self._with_logs(Snapshot(**data), nodes=[name])

    def _with_logs(self, snap, nodes=None):
        """Log tails of not-ready driver and validator pods on the nodes that matter (at most ``max_logs``)."""
        if nodes is None:
            nodes = {
                (p.get("spec") or {}).get("nodeName") for p in snap.targets if (p.get("spec") or {}).get("nodeName")
            }
            if any(not (p.get("spec") or {}).get("nodeName") for p in snap.targets):
                nodes = None  # pending pods may go anywhere: every node
        stack = NodeStack(snap)
        picked = []
        for node_name, components in sorted(stack.by_node.items()):
            if nodes is not None and node_name not in nodes:
                continue
            for component in ("driver", "operator-validator"):
                summary = components.get(component)
                if summary and not summary["ready"] and summary["phase"] != "Succeeded":
                    failure = container_failure(stack.raw_pods.get(summary["name"]) or {}) or {}
                    picked.append((summary["name"], failure.get("container")))
        for pod_name, container in picked[: self.max_logs]:
            snap.logs[pod_name] = self._log(pod_name, container)
        return snap

    def _log(self, pod_name, container):
        """``{"text", "previous"}`` with the tail of the (previous, if any) container log, or ``{"error"}``."""
        path = "/api/v1/namespaces/%s/pods/%s/log" % (quote(self.operator_namespace, safe=""), quote(pod_name, safe=""))
        what = "read the log of pod %s/%s" % (self.operator_namespace, pod_name)
        for previous in ("true", None):
            query = {"container": container, "tailLines": self.log_lines, "previous": previous}
            try:
                data = self.client.send("GET", path, query=query, raw=True, what=what, accept_statuses=(404,))
            except K8sError as exc:
                if previous and exc.status == 400:
                    continue  # no previous instance of the container: read the current one
                return {"error": exc.msg}
            if data is None:
                return {"error": "pod %s/%s is gone" % (self.operator_namespace, pod_name)}
            return {"text": data.decode("utf-8", "replace"), "previous": bool(previous)}
        return {"error": "no log"}
