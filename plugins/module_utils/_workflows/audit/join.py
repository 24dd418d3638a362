# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The fleet audit snapshot: every GPU host joined with how its cluster sees its node.

Pure functions over plain dicts (no I/O). Input per host is what ``gpu_host_facts`` and ``nvidia_gpu_facts``
returned (or the unreachable/failed task result), per cluster the ``gpu_cluster_info`` result. Output is the
versioned snapshot documented in ``docs/audit-snapshot.schema.json``: one row per host or GPU node, drift
per pool, GPU health by category, host/cluster mismatches, and the changes against an earlier snapshot.

This module builds the snapshot; ``host_row``, ``health``, ``mismatches``, ``pools`` and ``changes`` build its
parts, ``schema`` names its kind, version and row statuses.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.node_judgement import Context, judge_node
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit.changes import changes
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit.dra import (
    dra_mismatches,
    published_marks,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit.host_row import (
    host_facts_row,
    node_row,
    nvml_facts,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit.mismatches import mismatches
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit.pools import pools
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit.schema import (
    SCHEMA_VERSION,
    SNAPSHOT_KIND,
    STATUS_NOT_IN_INVENTORY,
    STATUSES,
)


def _cluster_entry(name, data):
    result = data.get("result") or {}
    failed = bool(result.get("failed") or result.get("unreachable")) or not result
    policy = result.get("cluster_policy") or {}
    kubeconfig = data.get("kubeconfig")
    return {
        "name": name,
        "status": "error" if failed else "ok",
        "error": (result.get("msg") or "no gpu_cluster_info result") if failed else None,
        # a path is recorded; an inline kubeconfig (a dict, with credentials) never is
        "kubeconfig": kubeconfig if isinstance(kubeconfig, str) or kubeconfig is None else "(inline)",
        "context": data.get("context"),
        "kubernetes_version": (result.get("kubernetes_version") or {}).get("git_version"),
        "cluster_policy_state": policy.get("state"),
        "operator_driver_version": (policy.get("driver") or {}).get("version"),
        "gpu_nodes": len(result.get("nodes") or {}),
        "gpu_allocatable": (result.get("totals") or {}).get("gpu_allocatable"),
        "api_requests": result.get("api_requests"),
        # cluster-wide DRA problems (a DeviceClass the published devices need is missing)
        "dra_problems": list((result.get("dra") or {}).get("problems") or []),
    }


def _pool_of(host, node):
    """The host's ``pool``, else the node's product label, else the one product its DRA devices publish (a node in
    the GPU Operator's GPUCluster mode has no product label), else ``unknown``."""
    products = list(((node or {}).get("dra") or {}).get("products") or {})
    dra_product = products[0] if len(products) == 1 else None
    return host.get("pool") or ((node or {}).get("gpu") or {}).get("product") or dra_product or "unknown"


#: What a row keeps of each finding of the node's judgement.
JUDGED_KEYS = ("layer", "code", "severity", "message", "fix")


def judgement(node, nvml, cluster_result):
    """The node's judgement (``_operator.node_judgement``): ``{failing_layer, findings}``, each finding ``{layer,
    code, severity, message, fix}``; ``nvml``: its host's NVML facts (None: not gathered, nothing compared)."""
    if node is None:
        return {"failing_layer": None, "findings": []}
    context = Context(classes_missing=(cluster_result.get("dra") or {}).get("device_classes_missing") or ())
    found = [{k: j[k] for k in JUDGED_KEYS} for j in judge_node(node, nvml, context)]
    errors = [f["layer"] for f in found if f["severity"] == "error"]
    return {"failing_layer": errors[0] if errors else None, "findings": found}


def fleet_rows(hosts, clusters, thermal_warning_c=85):
    """One row per inventory host, then one per GPU node no inventory host names, sorted by cluster and node."""
    rows = []
    for name in sorted(hosts):
        host = hosts[name]
        cluster = host.get("cluster") or "default"
        result = (clusters.get(cluster) or {}).get("result") or {}
        cluster_ok = bool(result) and not result.get("failed") and not result.get("unreachable")
        nodes = result.get("nodes") or {}
        node_name = host.get("node_name") or name
        node = nodes.get(node_name)
        status, message, facts, gpus, findings = host_facts_row(host, node, thermal_warning_c)
        gpus = published_marks(gpus, node)
        rows.append(
            {
                "id": "%s/%s" % (cluster, node_name),
                "host": name,
                "cluster": cluster,
                "pool": _pool_of(host, node),
                "node_name": node_name,
                "status": status,
                "message": message,
                "facts": facts,
                "node": node_row(node),
                "gpus": gpus,
                "findings": findings,
                "mismatches": mismatches(facts, node, cluster_ok) + dra_mismatches(facts, gpus, node),
                "judgement": judgement(node, nvml_facts(host), result),
            }
        )
    claimed = {(r["cluster"], r["node_name"]) for r in rows}
    for cluster in sorted(clusters):
        result = clusters[cluster].get("result") or {}
        for node_name, node in sorted((result.get("nodes") or {}).items()):
            if (cluster, node_name) in claimed:
                continue
            rows.append(
                {
                    "id": "%s/%s" % (cluster, node_name),
                    "host": None,
                    "cluster": cluster,
                    "pool": _pool_of({}, node),
                    "node_name": node_name,
                    "status": STATUS_NOT_IN_INVENTORY,
                    "message": "GPU node with no inventory host: its host facts were not gathered",
                    "facts": None,
                    "node": node_row(node),
                    "gpus": [],
                    "findings": [],
                    "mismatches": [],
                    "judgement": judgement(node, None, result),
                }
            )
    rows.sort(key=lambda r: (r["cluster"], r["pool"], r["node_name"]))
    return rows


def summary(rows, cluster_entries, pool_entries):
    """The snapshot's totals: clusters, rows by status, GPUs by health, findings, mismatches, drift, nodes that
    use DRA."""
    statuses = {}
    for r in rows:
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    gpus = [g for r in rows for g in r["gpus"]]
    return {
        "clusters": len(cluster_entries),
        "clusters_failed": sum(1 for c in cluster_entries if c["status"] != "ok"),
        "rows": len(rows),
        "hosts": sum(1 for r in rows if r["host"] is not None),
        "statuses": {s: statuses.get(s, 0) for s in STATUSES},
        "gpus": sum((r["facts"] or {}).get("gpu_count") or 0 for r in rows),
        "gpus_warning": sum(1 for g in gpus if g["health"] == "warning"),
        "gpus_critical": sum(1 for g in gpus if g["health"] == "critical"),
        "findings": sum(len(r["findings"]) for r in rows),
        "mismatches": sum(len(r["mismatches"]) for r in rows),
        "drift": sum(len(p["drift"]) for p in pool_entries),
        "dra_nodes": sum(1 for r in rows if (r["node"] or {}).get("dra") is not None),
    }


def build_snapshot(hosts, clusters, generated_at, baseline=None, thermal_warning_c=85):
    """The whole snapshot. ``hosts``: inventory name -> ``{cluster, node_name, pool, host_facts_result,
    nvml_result}``; ``clusters``: name -> ``{result, kubeconfig, context}`` (``result`` is gpu_cluster_info's);
    ``baseline``: an earlier snapshot (dict) or None."""
    rows = fleet_rows(hosts, clusters, thermal_warning_c)
    cluster_entries = [_cluster_entry(name, clusters[name]) for name in sorted(clusters)]
    pool_entries = pools(rows)
    snap = {
        "schema_version": SCHEMA_VERSION,
        "kind": SNAPSHOT_KIND,
        "generated_at": generated_at,
        "thermal_warning_c": thermal_warning_c,
        "summary": summary(rows, cluster_entries, pool_entries),
        "clusters": cluster_entries,
        "pools": pool_entries,
        "fleet": rows,
        "baseline": None,
        "changes": None,
    }
    if baseline is not None:
        snap["baseline"] = {"generated_at": baseline.get("generated_at"), "schema_version": baseline["schema_version"]}
        snap["changes"] = changes(baseline, snap)
    return snap
