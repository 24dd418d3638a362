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
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.errors import GpuOpsError

SCHEMA_VERSION = "1.0"
SNAPSHOT_KIND = "gpuops.gpu_operator/audit-snapshot"

#: Host row statuses.
STATUS_OK = "ok"
STATUS_UNREACHABLE = "unreachable"
STATUS_FAILED = "failed"
STATUS_NOT_AUDITED = "not_audited"  # in the inventory, but its fact tasks never ran (e.g. --limit)
STATUS_NOT_IN_INVENTORY = "not_in_inventory"  # a GPU node of the cluster with no inventory host

#: Fields compared across the hosts of a pool, in report order.
DRIFT_FIELDS = ("driver", "cuda", "kernel", "os", "vbios", "mig_layout", "toolkit", "runtime")

#: Health categories, in report (heat map column) order.
HEALTH_CATEGORIES = ("ecc", "remapped_rows", "xid", "thermal", "other")

SEVERITY_ORDER = {"ok": 0, "warning": 1, "critical": 2}

#: nvidia_gpu_facts health reasons -> (category, severity, explanation).
REASONS = {
    "uncorrectable_ecc_volatile": ("ecc", "critical", "uncorrectable ECC errors since the last reset (Xid 48/94/95)"),
    "uncorrectable_ecc_aggregate": ("ecc", "warning", "uncorrectable ECC errors over the GPU's lifetime"),
    "retired_pages_pending_reset_required": ("ecc", "critical", "retired pages pending: a GPU reset is needed"),
    "row_remap_pending_reset_required": (
        "remapped_rows",
        "critical",
        "a remapped row is pending: a GPU reset is needed (Xid 63)",
    ),
    "row_remap_failure": ("remapped_rows", "critical", "row remapping failed: the GPU needs service (Xid 64)"),
    "gpu_lost": ("xid", "critical", "the GPU fell off the bus (Xid 79)"),
    "hw_thermal_slowdown": ("thermal", "critical", "hardware thermal slowdown"),
    "sw_thermal_slowdown": ("thermal", "warning", "software thermal slowdown"),
    "hw_slowdown": ("thermal", "critical", "hardware slowdown (thermal or power brake)"),
    "hw_power_brake_slowdown": ("other", "critical", "hardware power brake slowdown"),
    "sw_power_cap": ("other", "warning", "clocks held by the software power cap"),
    "mig_mode_change_pending_reset": ("other", "warning", "a MIG mode change waits for a GPU reset"),
    "fabric_not_registered": ("other", "warning", "NVLink fabric registration not completed"),
}

#: Fields whose change against the baseline is reported, per row.
CHANGE_FIELDS = DRIFT_FIELDS + ("gpu_count", "gpu_health", "allocatable_gpus", "label_driver_version")


def _worse(a, b):
    return a if SEVERITY_ORDER.get(a, 0) >= SEVERITY_ORDER.get(b, 0) else b


# --- per-host facts ----------------------------------------------------------------------------


def _text(value):
    return None if value in (None, "") else str(value)


def _os_text(os_facts):
    os_facts = os_facts or {}
    if not os_facts.get("id"):
        return None
    return ("%s %s" % (os_facts.get("id"), os_facts.get("version_id") or "")).strip()


def toolkit_text(toolkit):
    """One comparable string for the NVIDIA Container Toolkit config; None when unknown."""
    if not toolkit:
        return None
    if not toolkit.get("installed"):
        return "not installed"
    parts = ["mode=%s" % (toolkit.get("mode") or "default")]
    if toolkit.get("cdi_default_kind"):
        parts.append("cdi-kind=%s" % toolkit["cdi_default_kind"])
    if toolkit.get("root"):
        parts.append("root=%s" % toolkit["root"])
    parts.append(toolkit.get("config_path") or "")
    return " ".join(p for p in parts if p)


def runtime_text(runtime):
    """One comparable string for the container runtime's GPU-relevant config; None when unknown."""
    if not runtime or not runtime.get("name"):
        return None if not runtime else "none found"
    config = runtime.get("config") or {}
    parts = [runtime["name"]]
    if config.get("version") is not None:
        parts.append("v%s" % config["version"])
    parts.append("default=%s" % (config.get("default_runtime") or "-"))
    parts.append("nvidia=%s" % ("yes" if config.get("nvidia_runtime") else "no"))
    parts.append("cdi=%s" % ("yes" if config.get("cdi_enabled") else "no"))
    return " ".join(parts)


def nvml_mig_layout(gpus):
    """NVML MIG layout: ``mig off``, or ``mig`` and the MIG device count per GPU (``mig 7/7/0``); None without GPUs."""
    if not gpus:
        return None
    if not any((g.get("mig") or {}).get("current") for g in gpus):
        return "mig off"
    return "mig " + "/".join(str(len((g.get("mig") or {}).get("devices") or [])) for g in gpus)


def mig_layout(gpus, node_gpu):
    """MIG layout: the node's ``nvidia.com/mig.config`` label (when any) and NVML's per-GPU MIG devices."""
    label = ((node_gpu or {}).get("mig") or {}).get("config")
    return " | ".join(p for p in (label, nvml_mig_layout(gpus)) if p) or None


def gpu_findings(gpu, thermal_warning_c):
    """Health findings of one GPU (NVML facts entry), each ``{category, severity, reason, evidence, gpu}``."""
    out = []
    index = gpu.get("index")
    reasons = list((gpu.get("health") or {}).get("reasons") or [])
    for reason in reasons:
        category, severity, text = REASONS.get(reason, ("xid" if gpu.get("error") else "other", "warning", reason))
        if gpu.get("error") and reason == (gpu.get("error") or {}).get("reason"):
            category, severity = "xid", "critical"
            text = REASONS.get(reason, (None, None, "GPU error %s" % reason))[2]
        out.append({"gpu": index, "category": category, "severity": severity, "reason": reason, "evidence": text})
    rows = gpu.get("remapped_rows") or {}
    if rows.get("uncorrected") and not rows.get("pending") and not rows.get("failure"):
        out.append(
            {
                "gpu": index,
                "category": "remapped_rows",
                "severity": "warning",
                "reason": "remapped_rows_uncorrected",
                "evidence": "%s rows remapped for uncorrectable errors" % rows["uncorrected"],
            }
        )
    temp = gpu.get("temperature_c")
    if isinstance(temp, (int, float)) and temp >= thermal_warning_c:
        if not any(f["category"] == "thermal" for f in out):
            out.append(
                {
                    "gpu": index,
                    "category": "thermal",
                    "severity": "warning",
                    "reason": "temperature_high",
                    "evidence": "%s C, at or above the %s C warning threshold" % (temp, thermal_warning_c),
                }
            )
        else:
            for f in out:
                if f["category"] == "thermal":
                    f["evidence"] += " at %s C" % temp
    return out


def _gpu_row(gpu, findings):
    """One GPU of a row; its health is the worse of NVML's verdict and the audit's own findings (e.g. a hot GPU)."""
    health = (gpu.get("health") or {}).get("status")
    for f in findings:
        health = _worse(f["severity"], health or "ok")
    return {
        "index": gpu.get("index"),
        "name": gpu.get("name"),
        "uuid": gpu.get("uuid"),
        "serial": gpu.get("serial"),
        "pci_bus_id": gpu.get("pci_bus_id"),
        "vbios": gpu.get("vbios_version"),
        "temperature_c": gpu.get("temperature_c"),
        "mig_enabled": (gpu.get("mig") or {}).get("current"),
        "mig_devices": len((gpu.get("mig") or {}).get("devices") or []),
        "ecc_volatile_uncorrected": (gpu.get("ecc") or {}).get("volatile_uncorrected"),
        "ecc_aggregate_uncorrected": (gpu.get("ecc") or {}).get("aggregate_uncorrected"),
        "remapped_rows": gpu.get("remapped_rows"),
        "health": health,
        "reasons": [f["reason"] for f in findings],
        "error": (gpu.get("error") or {}).get("reason"),
    }


def _node_row(node):
    if node is None:
        return None
    gpu = node.get("gpu") or {}
    alloc = node.get("allocatable") or {}
    mig_alloc = {k: v for k, v in alloc.items() if k.startswith("nvidia.com/mig-")}
    return {
        "name": node.get("name"),
        "ready": node.get("ready"),
        "unschedulable": node.get("unschedulable"),
        "product": gpu.get("product"),
        "label_gpu_count": gpu.get("count"),
        "label_driver_version": gpu.get("driver_version"),
        "label_cuda_version": gpu.get("cuda_runtime_version"),
        "mig_config": (gpu.get("mig") or {}).get("config"),
        "mig_config_state": (gpu.get("mig") or {}).get("config_state"),
        "allocatable_gpus": alloc.get("nvidia.com/gpu"),
        "allocatable_mig": mig_alloc,
        "upgrade_state": node.get("upgrade_state"),
        "operands_ready": node.get("operands_ready"),
        "operands_not_ready": sorted(c for c, s in (node.get("operands") or {}).items() if not _operand_ok(s)),
        "kernel": node.get("kernel_version"),
        "os_image": node.get("os_image"),
    }


def _operand_ok(summary):
    return bool(summary.get("ready") or summary.get("phase") == "Succeeded")


def host_status(host):
    """(status, message) of one host from its registered fact-task results."""
    results = [r for r in (host.get("host_facts_result"), host.get("nvml_result")) if r is not None]
    if not results:
        return STATUS_NOT_AUDITED, "the fact tasks did not run on this host (excluded by --limit or an earlier stop)"
    for r in results:
        if r.get("unreachable"):
            return STATUS_UNREACHABLE, r.get("msg") or "unreachable"
    for r in results:
        if r.get("failed"):
            return STATUS_FAILED, r.get("msg") or "the fact task failed"
    return STATUS_OK, None


def host_facts_row(host, node, thermal_warning_c):
    """The ``facts``, ``gpus`` and ``findings`` of one host row (facts None when the host gave none)."""
    status, message = host_status(host)
    hf = ((host.get("host_facts_result") or {}).get("ansible_facts") or {}).get("gpu_host")
    nv = ((host.get("nvml_result") or {}).get("ansible_facts") or {}).get("nvidia_gpu")
    if hf is None and nv is None:
        return status, message, None, [], []
    hf = hf or {}
    nv = nv or {}
    gpus = list(nv.get("gpus") or [])
    gpu_rows, findings = [], []
    for gpu in gpus:
        found = gpu_findings(gpu, thermal_warning_c)
        findings.extend(found)
        gpu_rows.append(_gpu_row(gpu, found))
    if nv and not nv.get("available"):
        findings.append(
            {
                "gpu": None,
                "category": "other",
                "severity": "critical",
                "reason": "nvml_%s" % (nv.get("reason") or "unavailable"),
                "evidence": "NVML unavailable (%s): %s" % (nv.get("reason"), nv.get("hint")),
            }
        )
    vbios = sorted({g.get("vbios_version") for g in gpus if g.get("vbios_version")})
    facts = {
        "nvml_available": nv.get("available"),
        "nvml_reason": nv.get("reason"),
        "driver": _text(nv.get("driver_version")) or _text((hf.get("nvidia_driver") or {}).get("version")),
        "cuda": _text(nv.get("cuda_driver_version")),
        "kernel": _text((hf.get("kernel") or {}).get("release")),
        "os": _os_text(hf.get("os")),
        "vbios": ", ".join(vbios) or None,
        "mig_layout": mig_layout(gpus, (node or {}).get("gpu")),
        "mig_enabled": any((g.get("mig") or {}).get("current") for g in gpus),
        "mig_nvml": nvml_mig_layout(gpus),
        "mig_all": bool(gpus) and all((g.get("mig") or {}).get("current") for g in gpus),
        "toolkit": toolkit_text(hf.get("container_toolkit")),
        "runtime": runtime_text(hf.get("container_runtime")),
        "gpu_count": nv.get("gpu_count") if nv else None,
        "gpu_health": nv.get("health"),
        "gpus_degraded": sum(1 for g in gpu_rows if g["health"] in ("warning", "critical")),
        "host_driver_proc": _text((hf.get("nvidia_driver") or {}).get("version")),
        "problems": len(hf.get("problems") or []),
    }
    return status, message, facts, gpu_rows, findings


def mismatches(facts, node, node_expected):
    """Host against cluster: node missing, NVML GPU count against allocatable, MIG mode against the node's
    ``all-*`` MIG config label, host driver against the driver label."""
    out = []
    if facts is None:
        return out
    if node is None:
        if node_expected:
            out.append(
                {
                    "kind": "node_missing",
                    "host_value": None,
                    "cluster_value": None,
                    "evidence": "no GPU node of this name in the cluster; set k8s_node_name or check the node joined",
                }
            )
        return out
    alloc = node.get("allocatable") or {}
    mig_alloc = sum(v for k, v in alloc.items() if k.startswith("nvidia.com/mig-") and isinstance(v, int))
    count = facts.get("gpu_count")
    allocatable = alloc.get("nvidia.com/gpu", 0)
    if facts.get("nvml_available") and not mig_alloc and not facts.get("mig_enabled") and allocatable != count:
        out.append(
            {
                "kind": "gpu_count_vs_allocatable",
                "host_value": count,
                "cluster_value": allocatable,
                "evidence": "NVML counts %s GPUs, the node advertises nvidia.com/gpu=%s" % (count, allocatable),
            }
        )
    config = ((node.get("gpu") or {}).get("mig") or {}).get("config")
    if facts.get("nvml_available") and facts.get("gpu_count") and config and config.startswith("all-"):
        mig_on = facts.get("mig_enabled")
        wants_mig = config != "all-disabled"
        if mig_on != wants_mig or (wants_mig and not facts.get("mig_all")):
            out.append(
                {
                    "kind": "mig_vs_label",
                    "host_value": facts.get("mig_nvml"),
                    "cluster_value": config,
                    "evidence": "node label nvidia.com/mig.config=%s, NVML %s" % (config, facts.get("mig_nvml")),
                }
            )
    label = (node.get("gpu") or {}).get("driver_version")
    if facts.get("driver") and label and facts["driver"] != label:
        out.append(
            {
                "kind": "driver_vs_label",
                "host_value": facts["driver"],
                "cluster_value": label,
                "evidence": "host driver %s, node label nvidia.com/cuda.driver-version %s" % (facts["driver"], label),
            }
        )
    return out


# --- the snapshot ------------------------------------------------------------------------------


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
    }


def _pool_of(host, node):
    return host.get("pool") or ((node or {}).get("gpu") or {}).get("product") or "unknown"


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
                "node": _node_row(node),
                "gpus": gpus,
                "findings": findings,
                "mismatches": mismatches(facts, node, cluster_ok),
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
                    "node": _node_row(node),
                    "gpus": [],
                    "findings": [],
                    "mismatches": [],
                }
            )
    rows.sort(key=lambda r: (r["cluster"], r["pool"], r["node_name"]))
    return rows


def _majority(values):
    """The most common value (ties: the smallest, so the choice is stable)."""
    counts = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    return sorted(counts, key=lambda v: (-counts[v], v))[0]


def pool_drift(rows):
    """For each field whose value differs between the hosts of a pool: the values, the majority, the outliers."""
    out = []
    for field in DRIFT_FIELDS:
        by_value = {}
        for r in rows:
            value = (r["facts"] or {}).get(field)
            if value is not None:
                by_value.setdefault(value, []).append(r["node_name"])
        if len(by_value) < 2:
            continue
        majority = _majority([v for v, names in by_value.items() for _n in names])
        out.append(
            {
                "field": field,
                "majority": majority,
                "values": [{"value": v, "nodes": sorted(n)} for v, n in sorted(by_value.items())],
                "outliers": sorted(n for v, names in by_value.items() if v != majority for n in names),
            }
        )
    return out


def pool_health(rows):
    """Per category: the worst severity, the GPUs affected and the findings count."""
    health = {c: {"severity": "ok", "gpus_affected": 0, "findings": 0} for c in HEALTH_CATEGORIES}
    for r in rows:
        affected = {}
        for f in r["findings"]:
            cell = health[f["category"]]
            cell["severity"] = _worse(f["severity"], cell["severity"])
            cell["findings"] += 1
            affected.setdefault(f["category"], set()).add(f["gpu"])
        for category, gpus in affected.items():
            health[category]["gpus_affected"] += len(gpus)
    return health


def pools(rows):
    groups = {}
    for r in rows:
        groups.setdefault((r["cluster"], r["pool"]), []).append(r)
    out = []
    for (cluster, pool), members in sorted(groups.items()):
        out.append(
            {
                "cluster": cluster,
                "pool": pool,
                "nodes": len(members),
                "hosts_ok": sum(1 for r in members if r["status"] == STATUS_OK),
                "gpus": sum((r["facts"] or {}).get("gpu_count") or 0 for r in members),
                "gpus_degraded": sum((r["facts"] or {}).get("gpus_degraded") or 0 for r in members),
                "health": pool_health(members),
                "drift": pool_drift(members),
            }
        )
    return out


def summary(rows, cluster_entries, pool_entries):
    statuses = {}
    for r in rows:
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    gpus = [g for r in rows for g in r["gpus"]]
    return {
        "clusters": len(cluster_entries),
        "clusters_failed": sum(1 for c in cluster_entries if c["status"] != "ok"),
        "rows": len(rows),
        "hosts": sum(1 for r in rows if r["host"] is not None),
        "statuses": {s: statuses.get(s, 0) for s in _STATUSES},
        "gpus": sum((r["facts"] or {}).get("gpu_count") or 0 for r in rows),
        "gpus_warning": sum(1 for g in gpus if g["health"] == "warning"),
        "gpus_critical": sum(1 for g in gpus if g["health"] == "critical"),
        "findings": sum(len(r["findings"]) for r in rows),
        "mismatches": sum(len(r["mismatches"]) for r in rows),
        "drift": sum(len(p["drift"]) for p in pool_entries),
    }


_STATUSES = (STATUS_OK, STATUS_UNREACHABLE, STATUS_FAILED, STATUS_NOT_AUDITED, STATUS_NOT_IN_INVENTORY)


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


# --- changes against a baseline ----------------------------------------------------------------


class SnapshotError(GpuOpsError, ValueError):
    """The baseline is not a snapshot this code can compare against."""


def check_baseline(data, source):
    if not isinstance(data, dict) or data.get("kind") != SNAPSHOT_KIND:
        raise SnapshotError(
            "%s is not a gpu_audit snapshot (kind %r); pass a JSON file an audit wrote"
            % (source, (data.get("kind") if isinstance(data, dict) else type(data).__name__))
        )
    version = str(data.get("schema_version") or "")
    major = SCHEMA_VERSION.split(".", 1)[0]
    if version.split(".", 1)[0] != major:
        raise SnapshotError(
            "%s has schema_version %s; this audit compares against major version %s only (re-run the audit "
            "with the old collection or drop the baseline)" % (source, version or "(none)", major)
        )
    return data


def _row_value(row, field):
    if field in ("allocatable_gpus", "label_driver_version"):
        return (row.get("node") or {}).get(field)
    return (row.get("facts") or {}).get(field)


def _finding_keys(row):
    return {(f["category"], f["gpu"], f["reason"]): f for f in row.get("findings") or []}


def changes(baseline, snap):
    """What changed from ``baseline`` to ``snap``: rows added/removed, status, fields, findings, mismatches."""
    before = {r["id"]: r for r in baseline.get("fleet") or []}
    after = {r["id"]: r for r in snap["fleet"]}
    out = {
        "added": sorted(set(after) - set(before)),
        "removed": sorted(set(before) - set(after)),
        "status": [],
        "fields": [],
        "findings_new": [],
        "findings_resolved": [],
        "mismatches_new": [],
        "mismatches_resolved": [],
    }
    for rid in sorted(set(before) & set(after)):
        b, a = before[rid], after[rid]
        if b["status"] != a["status"]:
            out["status"].append({"id": rid, "before": b["status"], "after": a["status"]})
        if b["status"] == a["status"] == STATUS_OK:
            for field in CHANGE_FIELDS:
                vb, va = _row_value(b, field), _row_value(a, field)
                if vb != va:
                    out["fields"].append({"id": rid, "field": field, "before": vb, "after": va})
            fb, fa = _finding_keys(b), _finding_keys(a)
            for key in sorted(set(fa) - set(fb), key=str):
                out["findings_new"].append(dict(fa[key], id=rid))
            for key in sorted(set(fb) - set(fa), key=str):
                out["findings_resolved"].append(dict(fb[key], id=rid))
            mb = {m["kind"]: m for m in b.get("mismatches") or []}
            ma = {m["kind"]: m for m in a.get("mismatches") or []}
            for kind in sorted(set(ma) - set(mb)):
                out["mismatches_new"].append(dict(ma[kind], id=rid))
            for kind in sorted(set(mb) - set(ma)):
                out["mismatches_resolved"].append(dict(mb[kind], id=rid))
    out["total"] = sum(len(v) for v in out.values())
    return out


def same_content(a, b):
    """True when two snapshots differ at most in ``generated_at`` (so a re-run changes no file)."""
    if not isinstance(a, dict) or not isinstance(b, dict):
        return False
    return _without_timestamp(a) == _without_timestamp(b)


def _without_timestamp(snapshot):
    return {k: v for k, v in snapshot.items() if k != "generated_at"}
