# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""GPU triage of one pod: the node-stack layers on the nodes it could use, its DRA claims, then ``scheduling``,
``quota``, ``preemption`` and ``queue`` (pure)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import key_of, meta_of, name_of, to_int
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.node_judgement import (
    DEGRADED_CODES,
    POD_JUDGED_CODES,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.cluster_view import is_gpu_node
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.triage.admission import (
    create_failures,
    owner_uids,
    quota_pressure,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.triage.claim_findings import (
    claim_findings,
    extended_on_dra,
    prepare_failure,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.triage.claims import PodClaims
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.triage.common import (
    DEFAULT_SCHEDULER,
    about_nodes,
    event_evidence,
    finding,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.triage.grouping import FilterGroups
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.triage.preemption import (
    preemption_findings,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.triage.queues import queue_findings
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.triage.sched import (
    FILTER_ORDER,
    first_failing_filter,
    is_gpu_resource,
    is_terminal,
    latest_event,
    parse_failed_scheduling,
    pod_requests,
)


def _is_about(event, pod):
    """True for an event about ``pod`` (by uid where both have one, else by name)."""
    obj = event.get("involvedObject") or {}
    if obj.get("kind") != "Pod":
        return False
    uid = meta_of(pod).get("uid")
    return obj.get("uid") == uid if uid and obj.get("uid") else obj.get("name") == name_of(pod)


class PodDiagnosis:
    """The findings of one pod, in the walk's order: node-stack findings (from :class:`NodeStack`) on its node or
    the nodes it could use, then scheduling (grouped by :class:`FilterGroups`), preemption, queues and quota.

    After :meth:`run`: ``findings``; ``candidates`` (the GPU nodes that pass every filter but resources);
    ``parsed`` (its newest ``FailedScheduling`` message, parsed, or None).
    """

    def __init__(self, snap, stack, pod):
        self.snap, self.stack, self.pod = snap, stack, pod
        self.spec = pod.get("spec") or {}
        self.status = pod.get("status") or {}
        self.key = key_of(pod)
        self.requests = pod_requests(pod)
        self.events = [e for e in snap.events if _is_about(e, pod)]
        self.claims = (
            PodClaims(snap, stack.dra, stack.nodes, pod, self.events) if self.spec.get("resourceClaims") else None
        )
        self.findings = []
        self.classified = {}
        self.candidates = []
        self.parsed = self.event = None

    def add(self, item):
        """Add a finding, naming this pod in its ``pods``."""
        if self.key not in item["pods"]:
            item = dict(item, pods=sorted(item["pods"] + [self.key]))
        self.findings.append(item)

    def extend(self, items):
        """Add each of ``items``."""
        for item in items:
            self.add(item)

    def run(self):
        """Walk the layers; returns ``self``."""
        node_name = self.spec.get("nodeName")
        if not self.requests and not self.claims:
            self.add(
                finding(
                    "scheduling",
                    "NoGPURequest",
                    "info",
                    "pod %s requests no nvidia.com/gpu or nvidia.com/mig-* resource and uses no ResourceClaim"
                    % self.key,
                    "Add resources.limits nvidia.com/gpu to the container (or a ResourceClaim, with DRA) if it needs "
                    "a GPU.",
                )
            )
        if node_name:
            self._bound(node_name)
        else:
            self._pending()
        self._quota()
        return self

    def _node_findings(self, name):
        """The node-layer findings of a node that concern this pod: the ``dra`` layer only when it uses claims, the
        ``device-plugin`` and ``gpu-health`` layers only when it asks for an extended GPU resource (or for neither,
        nothing to tell), never ``monitoring``; what the pod's own requests judge
        (:data:`~node_judgement.POD_JUDGED_CODES`) only as they find it; a node that still serves part of its GPUs
        (:data:`~node_judgement.DEGRADED_CODES`) as a warning."""
        skip = {"monitoring"}  # metrics do not place or run a pod
        if not self.claims:
            skip.add("dra")
        if not self.requests and self.claims:
            skip.update(("device-plugin", "gpu-health"))
        return [
            dict(f, severity="warning") if f["reason"] in DEGRADED_CODES else f
            for f in self.stack.findings(name)
            if f["layer"] not in skip and f["reason"] not in POD_JUDGED_CODES
        ]

    # -- bound pods ------------------------------------------------------------------------------

    def _bound(self, node_name):
        if node_name in self.stack.nodes:
            self.extend(self._node_findings(node_name))
        if self.claims and self.status.get("phase") == "Pending":
            plugin = self.stack.view(node_name)["operands"].get("dra-driver") if node_name in self.stack.nodes else None
            failure = prepare_failure(self.claims, node_name, {"plugin_pod": plugin})
            if failure:
                self.add(failure)
        if self.status.get("phase") == "Failed":
            reason = self.status.get("reason")
            self.add(
                about_nodes(
                    [node_name],
                    finding(
                        "device-plugin" if reason == "UnexpectedAdmissionError" else "scheduling",
                        "AdmissionRejected" if reason == "UnexpectedAdmissionError" else "PodFailed",
                        "error",
                        "pod %s failed on %s: %s %s" % (self.key, node_name, reason, self.status.get("message") or ""),
                        "The kubelet could not allocate the devices: the device plugin and the kubelet disagree on "
                        "free GPUs; check the device plugin's log on the node and recreate the pod."
                        if reason == "UnexpectedAdmissionError"
                        else "Read the pod's events and container statuses.",
                        {"reason": reason, "message": self.status.get("message")},
                    ),
                )
            )

    # -- pending pods ----------------------------------------------------------------------------

    def _pending(self):
        nodes = self.stack.snap.nodes
        for node in nodes:
            name = name_of(node)
            self.classified[name] = first_failing_filter(self.pod, node, self.stack.requested.get(name, {}))
        gpu_nodes = [n for n in nodes if self._gpu_node(n)]
        self.candidates = [name_of(n) for n in gpu_nodes if self.classified[name_of(n)][0] in (None, "resources")]
        gates = [g.get("name") for g in self.spec.get("schedulingGates") or []]
        scheduler = self.spec.get("schedulerName") or DEFAULT_SCHEDULER
        event = latest_event(self.events, "FailedScheduling")
        self.parsed = parse_failed_scheduling((event or {}).get("message")) if event else None
        self.event = event_evidence(event)
        impossible = self._larger_than_any_node(gpu_nodes)
        if impossible:  # impossible before unavailable: no healed node, freed GPU, toleration or priority places it
            self.add(impossible)
        else:
            self._unavailable(gpu_nodes, gates, scheduler)
        self.extend(queue_findings(self.snap, self.pod, self.requests, gates, scheduler))

    def _unavailable(self, gpu_nodes, gates, scheduler):
        """Layers 1-3 on the nodes the pod could use (blocking unless a healthy candidate has room), then what the
        scheduler decides and preemption."""
        fits_somewhere = any(
            self.classified[c][0] is None
            and not [f for f in self._node_findings(c) if f["severity"] == "error"]
            and (self.claims is None or self.claims.fits(c))
            for c in self.candidates
        )
        for name in self.candidates:
            for item in self._node_findings(name):
                if item["severity"] == "error" and fits_somewhere:
                    item = dict(item, severity="warning")
                self.add(item)
        if not gates and scheduler == DEFAULT_SCHEDULER:
            self._scheduling(gpu_nodes, fits_somewhere)
            short_nodes = [c for c in self.candidates if self.classified[c][0] == "resources"]
            self.extend(preemption_findings(self.snap, self.pod, short_nodes, (self.parsed or {}).get("preemption")))

    def _could_serve(self, name):
        """True when the node has what the pod asks for, free or not: as many of each GPU resource it requests, or
        DRA devices that could satisfy its pending claims (only busy or tainted at worst)."""
        if self.requests:
            alloc = (self.stack.nodes[name].get("status") or {}).get("allocatable") or {}
            return all(to_int(alloc.get(res)) >= amount for res, amount in self.requests.items())
        if self.claims:
            return name in self.stack.gpu_dra.by_node and all(
                self.claims.verdict(e["claim"], name)[0] in (None, "taint", "allocated")
                for e in self.claims.entries
                if e["status"] == "pending"
            )
        return True

    def _larger_than_any_node(self, gpu_nodes):
        """The finding for a pod that asks for more of a GPU resource than the largest node has (its capacity, as
        if every GPU there were free), or None."""
        for resource, amount in sorted(self.requests.items()):
            sizes = {
                name_of(n): to_int(((n.get("status") or {}).get("capacity") or {}).get(resource)) for n in gpu_nodes
            }
            largest = max(sizes.values() or [0])
            if 0 < largest < amount:
                biggest = sorted(n for n, size in sizes.items() if size == largest)
                return about_nodes(
                    biggest,
                    finding(
                        "scheduling",
                        "LargerThanAnyNode",
                        "error",
                        "pod %s asks for %d %s, and the largest node has %d (%s): no node could ever run it, "
                        "however many GPUs are freed" % (self.key, amount, resource, largest, ", ".join(biggest[:5])),
                        "Ask for at most %d %s per pod: split the work across pods (a multi-node job with %d per "
                        "worker), or add nodes with %d or more." % (largest, resource, largest, amount),
                        {"requested": {resource: amount}, "largest_nodes": biggest, "largest": largest},
                    ),
                )
        return None

    @staticmethod
    def _gpu_node(node):
        alloc = (node.get("status") or {}).get("allocatable") or {}
        return is_gpu_node(node) or any(is_gpu_resource(k) for k in alloc)

    def _scheduling(self, gpu_nodes, fits_somewhere):
        ev = {"scheduler_event": self.event, "scheduler_reasons": (self.parsed or {}).get("reasons")}
        groups = {}
        for node in gpu_nodes:
            name = name_of(node)
            kind, detail = self.classified[name]
            if kind is not None:
                groups.setdefault(kind, []).append((name, detail))
        non_gpu = sorted(name_of(n) for n in self.stack.snap.nodes if not self._gpu_node(n))
        severity = "info" if fits_somewhere else "error"
        if fits_somewhere:
            self.add(
                about_nodes(
                    [c for c in self.candidates if self.classified[c][0] is None],
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
                    ),
                )
            )
        grouped = FilterGroups(self.stack, self.requests, severity, ev)
        dra_only = extended_on_dra(self.key, self.requests, self.stack.snap.nodes, self.stack.gpu_dra)
        unoffered = dra_only["evidence"]["requested"] if dra_only else ()
        for kind in FILTER_ORDER:
            members = groups.get(kind, [])
            if kind == "taint":  # a toleration helps only on a node that has what the pod asks for
                members = [m for m in members if self._could_serve(m[0])]
            for item in grouped.findings(kind, members):
                # the resource is not offered at all: ExtendedResourceOnDRA says why, not a shortage
                if item["evidence"].get("resource", item["evidence"].get("requested")) not in unoffered:
                    self.add(item)
        if dra_only:
            self.add(dra_only)
        if self.claims:
            passing = [c for c in self.candidates if self.classified[c][0] is None]
            self.extend(claim_findings(self.claims, passing, fits_somewhere, ev))
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
        if not self.event and not fits_somewhere and not (self.claims and self.claims.unresolved):
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
                about_nodes(
                    non_gpu,
                    finding(
                        "scheduling",
                        "NodesWithoutGPUs",
                        "info",
                        "%d node(s) have no GPUs: %s" % (len(non_gpu), ", ".join(non_gpu)),
                        None,
                    ),
                )
            )

    # -- quota -----------------------------------------------------------------------------------

    def _quota(self):
        self.extend(create_failures(self.snap.events, owner_uids(self.pod)))
        if not is_terminal(self.pod) and self.requests:
            for item in quota_pressure(self.snap.quotas):
                self.add(dict(item, severity="info"))
