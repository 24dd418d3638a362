# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""GPU triage, ``scheduling`` layer: one pod's failing GPU nodes grouped into findings, one per filter and cause
(cordon, each taint, selector/affinity, each GPU or MIG resource) (pure)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import labels_of, taint_text, to_int
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.cluster_view import (
    GPU_RESOURCE,
    MIG_RESOURCE_PREFIX,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.triage.common import (
    about_nodes,
    finding,
    format_requests,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.triage.sched import is_gpu_resource

_MIG_LABELS = (
    ("mig_capable", "nvidia.com/mig.capable"),
    ("mig_config", "nvidia.com/mig.config"),
    ("mig_strategy", "nvidia.com/mig.strategy"),
)


class FilterGroups:
    """Findings for the GPU nodes one pod cannot use, grouped by the scheduler filter each one fails first.

    ``stack`` is the :class:`NodeStack`, ``requests`` the pod's GPU requests; every finding gets ``severity`` and
    the scheduler's ``evidence``.
    """

    def __init__(self, stack, requests, severity, evidence):
        self.stack, self.requests = stack, requests
        self.severity, self.evidence = severity, evidence

    def findings(self, kind, members):
        """Findings for the ``members`` (``(node name, filter detail)``) that fail filter ``kind`` first."""
        if not members:
            return []
        names = [m[0] for m in members]
        if kind == "unschedulable":
            return [
                about_nodes(
                    names,
                    finding(
                        "scheduling",
                        "NodeCordoned",
                        self.severity,
                        "%d GPU node(s) are cordoned (unschedulable): %s" % (len(names), ", ".join(names)),
                        "Uncordon them (kubectl uncordon NODE) once maintenance is over.",
                        self.evidence,
                    ),
                )
            ]
        if kind == "taint":
            return self._taints(members)
        if kind == "affinity":
            return [self._selectors(members)]
        return self._resources(members)

    def _allocatable(self, name):
        return (self.stack.nodes[name].get("status") or {}).get("allocatable") or {}

    def _free_gpus(self, name):
        """Free GPU/MIG resources on a node for what this pod asks (allocatable minus requested)."""
        alloc = self._allocatable(name)
        used = self.stack.requested.get(name, {})
        return {res: max(to_int(alloc.get(res)) - used.get(res, 0), 0) for res in self.requests if res in alloc}

    def _taints(self, members):
        by_key = {}
        for name, detail in members:
            taint = detail["taint"]
            by_key.setdefault((taint["key"], taint.get("value"), taint["effect"]), []).append(name)
        out = []
        for (key, value, effect), nodes in sorted(by_key.items(), key=lambda kv: (-len(kv[1]), kv[0][0] or "")):
            taint = {"key": key, "value": value, "effect": effect}
            free = {n: self._free_gpus(n) for n in nodes}
            out.append(
                about_nodes(
                    nodes,
                    finding(
                        "scheduling",
                        "UntoleratedTaint",
                        self.severity,
                        "%d GPU node(s) have taint %s that the pod does not tolerate: %s"
                        % (
                            len(nodes),
                            taint_text(taint),
                            ", ".join(
                                "%s (%s free)" % (n, format_requests(free[n]) if free[n] else "nothing") for n in nodes
                            ),
                        ),
                        "Add a toleration {key: %s, operator: Exists, effect: %s} to the pod, or remove the taint "
                        "(kubectl taint nodes %s %s:%s-)." % (key, effect, " ".join(nodes), key, effect),
                        dict(self.evidence, taint=taint, free=free),
                    ),
                )
            )
        return out

    def _selectors(self, members):
        names = [m[0] for m in members]
        mismatches = {name: detail["mismatches"] for name, detail in members}
        keys = sorted({"%s %s" % (m["source"], m["key"]) for ms in mismatches.values() for m in ms})
        return about_nodes(
            names,
            finding(
                "scheduling",
                "NodeSelectorMismatch",
                self.severity,
                "%d GPU node(s) do not match the pod's %s: %s" % (len(names), ", ".join(keys), ", ".join(names)),
                "Fix the pod's nodeSelector/affinity, or label the nodes it should run on.",
                dict(self.evidence, mismatches=mismatches),
            ),
        )

    def _resources(self, members):
        """MIG resource naming first (the resource is not advertised), then a plain shortage."""
        advertised = {}
        for name, _detail in members:
            for res in self._allocatable(name):
                if is_gpu_resource(res):
                    advertised.setdefault(res, []).append(name)
        shortage = {}
        for name, detail in members:
            for res, amounts in detail["insufficient"].items():
                shortage.setdefault(res, []).append((name, amounts))
        out = []
        for res, rows in sorted(shortage.items()):
            nodes = [r[0] for r in rows]
            offered = {k: v for k, v in advertised.items() if k != res and any(n in nodes for n in v)}
            if res not in advertised and (res.startswith(MIG_RESOURCE_PREFIX) or offered):
                out.append(self._mig_name(res, nodes, offered))
            else:
                out.append(self._insufficient(res, rows))
        return out

    def _mig_name(self, res, nodes, offered):
        """The pod asks for a GPU or MIG resource its candidate nodes do not advertise."""
        mig_nodes = {n: {k: labels_of(self.stack.nodes[n]).get(label) for k, label in _MIG_LABELS} for n in nodes}
        if res == GPU_RESOURCE:
            msg = "no candidate node advertises nvidia.com/gpu; they advertise %s (MIG mixed strategy)" % (
                ", ".join(sorted(offered))
            )
            fix = "Request one of %s instead of nvidia.com/gpu, or switch the nodes to MIG strategy single." % (
                ", ".join(sorted(offered))
            )
        else:
            msg = "no node advertises %s%s" % (res, "; available: %s" % ", ".join(sorted(offered)) if offered else "")
            capable = [n for n, m in mig_nodes.items() if m["mig_capable"] == "true"]
            fix = (
                "Request one of the advertised resources, or partition MIG-capable nodes (%s) with "
                "nvidia.com/mig.config=all-<profile> under MIG strategy mixed." % (", ".join(capable) or "none")
            )
        return about_nodes(
            nodes,
            finding(
                "scheduling",
                "MIGResourceName",
                self.severity,
                msg,
                fix,
                dict(
                    self.evidence,
                    requested=res,
                    advertised={k: sorted(v) for k, v in offered.items()},
                    nodes_mig=mig_nodes,
                ),
            ),
        )

    def _insufficient(self, res, rows):
        """Not enough of ``res`` free on the nodes of ``rows`` (``(node name, {requested, free})``)."""
        detail = {
            n: {
                "allocatable": to_int(self._allocatable(n).get(res)),
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
            message += "; %s advertise(s) 0 (see the driver, toolkit and device-plugin layers)" % ", ".join(
                sorted(zero)
            )
        return about_nodes(
            [r[0] for r in rows],
            finding(
                "scheduling",
                "InsufficientGPU",
                self.severity,
                message,
                "Lower the request to at most %d, wait for GPU pods to finish, or add GPU nodes." % best[1]["free"]
                if best[1]["free"] > 0
                else "Wait for GPU pods on these nodes to finish, preempt them with a higher priority, or add nodes.",
                dict(self.evidence, resource=res, per_node=detail),
            ),
        )
