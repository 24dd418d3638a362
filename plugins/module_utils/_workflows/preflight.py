# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change incompatibly at any
# time, including in a patch release. Do not use it elsewhere.

"""The cluster-side facts the baseline checks read (gpu_preflight_info): a few reads, never one per node.

Reads: ``/version``; nodes (one paginated LIST); DaemonSets labelled as NFD (one LIST across namespaces);
API discovery for the ServiceMonitor, NFD, NVIDIA and ``resource.k8s.io/v1`` groups (no RBAC needed); the
RuntimeClass and the operator namespace (one GET each); ClusterPolicies (one LIST); then one SelfSubjectAccessReview
per permission asked.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from dataclasses import dataclass, fields
from typing import Optional, Sequence

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.operator_names import discover
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import labels_of, name_of, namespace_of
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.cluster_view import (
    UPGRADE_STATE_LABEL,
    is_gpu_node,
)

SECTIONS = ("version", "nodes", "nfd", "crds", "runtime_class", "namespace", "cluster_policy", "access")
NFD_SELECTOR = "app.kubernetes.io/name=node-feature-discovery"
#: Resource name -> (discovery path, resource plural) looked up without RBAC through API discovery.
DISCOVERY = {
    "servicemonitors.monitoring.coreos.com": ("/apis/monitoring.coreos.com/v1", "servicemonitors"),
    "nodefeaturerules.nfd.k8s-sigs.io": ("/apis/nfd.k8s-sigs.io/v1alpha1", "nodefeaturerules"),
    "clusterpolicies.nvidia.com": ("/apis/nvidia.com/v1", "clusterpolicies"),
    # Built in, not a CRD: served from Kubernetes 1.34 (DRA GA); the baseline's GPUCluster-mode checks read it.
    "resourceslices.resource.k8s.io": ("/apis/resource.k8s.io/v1", "resourceslices"),
}


def node_summary(node):
    spec = node.get("spec") or {}
    labels = labels_of(node)
    info = (node.get("status") or {}).get("nodeInfo") or {}
    return {
        "name": name_of(node),
        "gpu": is_gpu_node(node),
        "all_labels": labels,
        "taints": [
            {"key": t.get("key"), "value": t.get("value"), "effect": t.get("effect")} for t in spec.get("taints") or []
        ],
        "unschedulable": bool(spec.get("unschedulable")),
        "upgrade_state": labels.get(UPGRADE_STATE_LABEL),
        "kubelet_version": info.get("kubeletVersion"),
        "container_runtime_version": info.get("containerRuntimeVersion"),
        "os_image": info.get("osImage"),
    }


def access_review_body(perm):
    attrs = {"verb": perm["verb"], "resource": perm["resource"], "group": perm.get("group") or ""}
    for key in ("namespace", "subresource", "name"):
        if perm.get(key):
            attrs[key] = perm[key]
    return {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": attrs},
    }


def check_access(review, permissions):
    """``review(body) -> status dict`` for each permission; ``{checked, missing: [perm + reason]}``."""
    missing = []
    for perm in permissions:
        status = review(access_review_body(perm)) or {}
        if not status.get("allowed"):
            entry = {k: perm.get(k) for k in ("verb", "group", "resource", "subresource", "namespace", "name")}
            entry["reason"] = status.get("reason") or status.get("evaluationError") or ""
            missing.append(entry)
    return {"checked": len(permissions), "missing": missing}


@dataclass(frozen=True)
class PreflightOptions:
    """What gpu_preflight_info reads (its options, same names): the ``sections``, the operator's names
    (``operator_namespace``, ``cluster_policy``; None: discover), the ``runtime_class`` and the ``permissions`` the
    ``identity`` needs."""

    sections: Sequence[str] = SECTIONS
    operator_namespace: Optional[str] = None
    runtime_class: str = "nvidia"
    permissions: Sequence[dict] = ()
    identity: str = "automation"
    page_size: int = 500
    cluster_policy: Optional[str] = None

    @classmethod
    def from_params(cls, params):
        """The options of a gpu_preflight_info task."""
        return cls(**{field.name: params[field.name] for field in fields(cls)})


def gather(client, options, review=None):
    """Every section ``options`` (a :class:`PreflightOptions`) asks for; ``client`` is a ``_clients.k8s.K8sClient``,
    ``review`` posts one access review. The ``namespace`` and ``cluster_policy`` sections discover the operator's
    names unless given (``operator``)."""
    sections, page_size, runtime_class = options.sections, options.page_size, options.runtime_class
    out = {}
    names = None
    if "namespace" in sections or "cluster_policy" in sections:
        names = discover(client, options.operator_namespace, options.cluster_policy, page_size)
        out["operator"] = names.result()
    if "version" in sections:
        out["kubernetes_version"] = client.version()
    if "nodes" in sections:
        nodes = client.list_core("nodes", page_size=page_size)
        out["nodes"] = {n["name"]: n for n in (node_summary(x) for x in nodes)}
    if "nfd" in sections:
        items, _meta = client.list_all(
            "/apis/apps/v1/daemonsets", label_selector=NFD_SELECTOR, page_size=page_size, what="list NFD daemonsets"
        )
        out["nfd"] = {
            "daemonsets": sorted(
                ({"namespace": namespace_of(d), "name": name_of(d)} for d in items),
                key=lambda d: (d["namespace"], d["name"]),
            ),
            "labelled_nodes": sum(
                1
                for n in (out.get("nodes") or {}).values()
                if any(k.startswith("feature.node.kubernetes.io/") for k in n["all_labels"])
            ),
        }
    if "crds" in sections:
        crds = {}
        for crd, (path, plural) in sorted(DISCOVERY.items()):
            doc = client.get_or_none(path, what="discover %s" % path)
            crds[crd] = bool(doc) and any(r.get("name") == plural for r in doc.get("resources") or [])
        out["crds"] = crds
    if "runtime_class" in sections:
        rc = client.get_or_none("/apis/node.k8s.io/v1/runtimeclasses/%s" % runtime_class, what="read RuntimeClass")
        out["runtime_class"] = {"name": runtime_class, "exists": rc is not None, "handler": (rc or {}).get("handler")}
    if "namespace" in sections:
        ns = client.get_or_none("/api/v1/namespaces/%s" % names.namespace, what="read namespace")
        out["namespace"] = {
            "name": names.namespace,
            "exists": ns is not None,
            "labels": labels_of(ns),
        }
    if "cluster_policy" in sections:
        spec = (names.policy or {}).get("spec") or {}
        out["cluster_policy"] = {
            "exists": names.policy is not None,
            "name": name_of(names.policy),
            "dcgm_exporter_enabled": (spec.get("dcgmExporter") or {}).get("enabled"),
        }
    if "access" in sections:
        permissions = list(options.permissions)
        result = check_access(review, permissions) if permissions else {"checked": 0, "missing": []}
        result["identity"] = options.identity
        out["access"] = [result]
    out["api_requests"] = client.requests
    return out
