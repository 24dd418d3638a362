# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.


"""GPU triage: the layer names, the finding shape and the :class:`Snapshot` of API data (pure)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.layers import LAYERS as CORE_LAYERS
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.layers import (
    in_layer_order,
    merged_routes,
    owner_of,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import name_of

#: Triage's layers, in the walk's order: the whole vocabulary of ``_core.layers``.
LAYERS = CORE_LAYERS
#: The layers checked on a node (and for every pod on the nodes it could use).
NODE_LAYERS = in_layer_order(("driver", "node", "toolkit", "device-plugin", "gpu-health", "mig", "monitoring"))
SEVERITIES = ("error", "warning", "info")
DEFAULT_SCHEDULER = "default-scheduler"
KUEUE_GROUP = "kueue.x-k8s.io"
VOLCANO_GROUP = "scheduling.volcano.sh"
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
VOLCANO_GROUP_ANNOTATIONS = ("scheduling.k8s.io/group-name", "scheduling.volcano.sh/group-name")

# --------------------------------------------------------------------------------------------------
# Small helpers


def add_owners(result, routes=None):
    """Give every finding of a triage ``result`` (its own and its pods') the ``owner`` of its layer under
    ``routes`` (layer -> owner, merged over the default routes of ``_core.layers``); returns ``result``."""
    routes = merged_routes(routes)
    for f in list(result.get("findings") or []) + [
        f for p in result.get("pods") or [] for f in p.get("findings") or []
    ]:
        f["owner"] = owner_of(f.get("layer"), routes)
    return result


def tail_lines(text, lines):
    """The last ``lines`` lines of ``text``, each cut at 500 characters."""
    if not text:
        return []
    return [line[:500] for line in text.splitlines()[-lines:]]


def named(objs, name):
    """The object called ``name`` among ``objs``, or None."""
    return next((o for o in objs or [] if name_of(o) == name), None)


def finding(layer, reason, severity, message, fix=None, evidence=None):
    """One finding: ``layer`` (one of :data:`LAYERS`), a stable ``reason`` code, ``severity``, text and evidence;
    :func:`about_nodes` names the nodes it is about, a pod's diagnosis the pods (``PodDiagnosis.add``)."""
    return {
        "layer": layer,
        "reason": reason,
        "severity": severity,
        "message": message,
        "fix": fix,
        "evidence": evidence or {},
        "nodes": [],
        "pods": [],
    }


def about_nodes(nodes, found):
    """``found`` (a :func:`finding`) about ``nodes``: their names, sorted, once each."""
    found["nodes"] = sorted({n for n in nodes if n})
    return found


def from_judged(judged, node):
    """The triage finding of one finding of the shared judgement (``_operator.node_judgement``) about ``node``."""
    return about_nodes(
        [node],
        finding(
            judged["layer"], judged["code"], judged["severity"], judged["message"], judged["fix"], judged["details"]
        ),
    )


def format_requests(requests):
    """GPU requests as ``resource=amount, ...`` (``no GPUs`` when empty)."""
    return ", ".join("%s=%s" % (k, v) for k, v in sorted(requests.items())) or "no GPUs"


def last_seen(event):
    """When ``event`` was last seen (events.k8s.io series, core lastTimestamp, eventTime, firstTimestamp)."""
    series = event.get("series") or {}
    return (
        series.get("lastObservedTime")
        or event.get("lastTimestamp")
        or event.get("eventTime")
        or event.get("firstTimestamp")
    )


def event_evidence(event):
    """The evidence of one event: reason, message, count, when last seen and the object it is about."""
    if not event:
        return None
    series = event.get("series") or {}
    return {
        "reason": event.get("reason"),
        "message": event.get("message") or event.get("note"),
        "count": series.get("count") or event.get("count") or 1,
        "last_seen": last_seen(event),
        "object": "%s/%s"
        % ((event.get("involvedObject") or {}).get("kind"), (event.get("involvedObject") or {}).get("name")),
    }


# --------------------------------------------------------------------------------------------------
# The data read from the API


class Snapshot:
    """Everything :func:`diagnose` needs, as raw API dicts. ``None`` for a list means "not read"."""

    def __init__(self, **kwargs):
        self.nodes = kwargs.get("nodes") or []
        self.operator_pods = kwargs.get("operator_pods") or []
        self.operator_events = kwargs.get("operator_events") or []
        self.node_events = kwargs.get("node_events") or []
        self.bound_pods = kwargs.get("bound_pods") or []
        self.targets = kwargs.get("targets") or []
        self.events = kwargs.get("events") or []
        self.quotas = kwargs.get("quotas") or []
        self.limit_ranges = kwargs.get("limit_ranges") or []
        self.priority_classes = kwargs.get("priority_classes") or []
        self.cluster_policies = kwargs.get("cluster_policies")
        self.gpu_cluster = kwargs.get("gpu_cluster")  # the GPUCluster in use where no ClusterPolicy is (26.7+)
        self.kueue = kwargs.get("kueue")  # None: API group not served; else dict of lists
        self.volcano = kwargs.get("volcano")
        self.logs = kwargs.get("logs") or {}  # pod name -> {"text": str} or {"error": str}
        self.operator_namespace = kwargs.get("operator_namespace") or "gpu-operator"
        # resource.k8s.io/v1 (None: not served or not read): ResourceSlices, DeviceClasses, ResourceClaims (every
        # namespace) and the target namespace's ResourceClaimTemplates
        self.slices = kwargs.get("slices")
        self.device_classes = kwargs.get("device_classes")
        self.claims = kwargs.get("claims")
        self.claim_templates = kwargs.get("claim_templates")
        self.log_lines = kwargs.get("log_lines") or 20
        # the NVML facts of the examined nodes' hosts (node name -> nvidia_gpu facts), where the caller gave them
        self.nvml = kwargs.get("nvml") or {}
        self.namespace_exists = kwargs.get("namespace_exists")  # False: read and missing; None: not read or unreadable
