# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The cluster's GPU view, built from raw Kubernetes JSON (dicts as the API returns them).

Pure functions: no I/O, so they are tested with plain dicts. Input is what a handful of LISTs return
(nodes, pods of the operator namespace, ClusterPolicies, NVIDIADrivers, and the DRA objects through a
``dra_view.DraIndex``); the cost is linear in the number of objects.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from dataclasses import dataclass
from typing import Optional, Sequence

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.operator_names import cluster_policy_in_use
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.errors import ArgumentError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import (
    is_true,
    labels_of,
    meta_of,
    name_of,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.dra_view import (
    PLUGIN_COMPONENT,
    DraIndex,
    cluster_dra,
    peer_shortfalls,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.operand_pods import (
    conditions_by_type,
    operand_ok,
    operand_stuck,
    operands_by_node,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.quarantine import (
    UPGRADE_STATE_LABEL,
    markers,
    quarantine_evidence,
)

GPU_RESOURCE = "nvidia.com/gpu"
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"
UPGRADE_SKIP_LABEL = "nvidia.com/gpu-driver-upgrade.skip"
DEPLOY_LABEL_PREFIX = "nvidia.com/gpu.deploy."
PRESENT_LABEL = "nvidia.com/gpu.present"

#: Labels that make a node a GPU node when no label_selector is given (any one is enough): the
#: operator's own label and the three NFD PCI vendor labels the operator itself looks for.
GPU_NODE_LABELS = (
    PRESENT_LABEL,
    "feature.node.kubernetes.io/pci-10de.present",
    "feature.node.kubernetes.io/pci-0302_10de.present",
    "feature.node.kubernetes.io/pci-0300_10de.present",
)

#: How GPUs reach pods on a node: the extended resource of the device plugin, DRA claims, both, or neither.
MODES = ("extended-resource", "dra", "both", "none")


def _quantity(value):
    """A GPU quantity or count as an int (they are plain integers); None stays None, anything else (a string such
    as ``"1k"``) is returned as given."""
    if value is None:
        return None
    try:
        return int(str(value))
    except ValueError:
        return value


def is_gpu_node(node):
    """True if the node carries any of GPU_NODE_LABELS as ``true`` or has ``nvidia.com/gpu`` capacity.

    ``nvidia.com/gpu.present=false`` (the operator sets it when a GPU disappears) still counts when NFD
    sees NVIDIA PCI devices: exactly the node an operator wants to look at.
    """
    labels = labels_of(node)
    if any(is_true(labels.get(key)) for key in GPU_NODE_LABELS):
        return True
    capacity = (node.get("status") or {}).get("capacity") or {}
    return bool(_quantity(capacity.get(GPU_RESOURCE)) or any(k.startswith(MIG_RESOURCE_PREFIX) for k in capacity))


def _gpu_resources(resources):
    return {
        k: _quantity(v) for k, v in (resources or {}).items() if k == GPU_RESOURCE or k.startswith(MIG_RESOURCE_PREFIX)
    }


def _version(labels, prefix, parts):
    full = labels.get(prefix + ".full")
    if full:
        return full
    values = [labels.get("%s.%s" % (prefix, p)) for p in parts]
    if not values[0]:
        return None
    return ".".join(v for v in values if v)


def gpu_labels(labels):
    """The GPU-relevant facts in a node's labels (GFD, device plugin, mig-manager, operator)."""
    driver = _version(labels, "nvidia.com/cuda.driver-version", ("major", "minor", "revision"))
    if driver is None:  # deprecated label names, still emitted
        driver = _version(labels, "nvidia.com/cuda.driver", ("major", "minor", "rev"))
    cuda = _version(labels, "nvidia.com/cuda.runtime-version", ("major", "minor"))
    if cuda is None:
        cuda = _version(labels, "nvidia.com/cuda.runtime", ("major", "minor"))
    present = labels.get(PRESENT_LABEL)
    mig_types = {}
    for key, value in labels.items():
        # nvidia.com/mig-1g.10gb.count -> {"1g.10gb": {"count": 7, ...}}
        if key.startswith(MIG_RESOURCE_PREFIX) and "." in key[len(MIG_RESOURCE_PREFIX) :]:
            rest = key[len(MIG_RESOURCE_PREFIX) :]
            profile, _unused, field = rest.rpartition(".")
            if field in ("count", "memory", "multiprocessors"):
                mig_types.setdefault(profile, {})[field] = _quantity(value)
    return {
        "present": None if present is None else is_true(present),
        "product": labels.get("nvidia.com/gpu.product"),
        "count": _quantity(labels.get("nvidia.com/gpu.count")),
        "memory_mib": _quantity(labels.get("nvidia.com/gpu.memory")),
        "family": labels.get("nvidia.com/gpu.family"),
        "replicas": _quantity(labels.get("nvidia.com/gpu.replicas")),
        "sharing_strategy": labels.get("nvidia.com/gpu.sharing-strategy"),
        "driver_version": driver,
        "cuda_runtime_version": cuda,
        "mig": {
            "capable": None if "nvidia.com/mig.capable" not in labels else is_true(labels["nvidia.com/mig.capable"]),
            "strategy": labels.get("nvidia.com/mig.strategy"),
            "config": labels.get("nvidia.com/mig.config"),
            "config_state": labels.get("nvidia.com/mig.config.state"),
            "types": mig_types,
        },
    }


def _condition_list(conditions):
    return [
        {
            "type": c.get("type"),
            "status": c.get("status"),
            "reason": c.get("reason"),
            "message": c.get("message"),
            "last_transition_time": c.get("lastTransitionTime"),
        }
        for c in conditions or []
    ]


#: Operands every GPU node runs when its ``nvidia.com/gpu.deploy.<component>`` label is ``true`` and the ClusterPolicy
#: enables them (the chart's default): without them no GPU reaches a pod (the driver, the runtime hook, the
#: advertised resource). Each with its ClusterPolicy spec key.
REQUIRED_OPERANDS = (
    ("driver", "driver"),
    ("container-toolkit", "toolkit"),
    ("device-plugin", "devicePlugin"),
    (PLUGIN_COMPONENT, "draDriver"),
)
ALL_REQUIRED = tuple(c for c, _key in REQUIRED_OPERANDS)


def required_operands(policy=None):
    """The required operands a ClusterPolicy (raw dict; None: the chart defaults) enables."""
    spec = (policy or {}).get("spec") or {}
    return tuple(c for c, key in REQUIRED_OPERANDS if (spec.get(key) or {}).get("enabled") is not False)


def missing_operands(deploy, operands, required=ALL_REQUIRED):
    """Required operands the node is labelled to run (deploy label ``true``) that have no pod on it."""
    return [c for c in required if deploy.get(c) == "true" and c not in operands]


def node_mode(capacity, dra_devices):
    """One of :data:`MODES`: ``capacity`` (GPU resources, as in :func:`node_view`) and the DRA device count."""
    extended = any(isinstance(v, int) and v > 0 for v in capacity.values())
    if extended:
        return "both" if dra_devices else "extended-resource"
    return "dra" if dra_devices else "none"


def node_view(node, operands=None, required=ALL_REQUIRED, dra=None, known=None):
    """The per-node GPU view of one node dict (and its operand summaries from :func:`operands_by_node`);
    ``required``: the required operands the ClusterPolicy enables (:func:`required_operands`); ``dra``: the
    cluster's ``dra_view.DraIndex`` (None: DRA not read, no devices); ``known``: the remediation markers
    (``_view.quarantine.markers``; None: the known ones) whose evidence is the view's ``quarantine``."""
    spec = node.get("spec") or {}
    status = node.get("status") or {}
    labels = labels_of(node)
    info = status.get("nodeInfo") or {}
    conditions = conditions_by_type(status.get("conditions"))
    operands = operands or {}
    deploy = {k[len(DEPLOY_LABEL_PREFIX) :]: v for k, v in labels.items() if k.startswith(DEPLOY_LABEL_PREFIX)}
    missing = missing_operands(deploy, operands, required)
    capacity = _gpu_resources(status.get("capacity"))
    dra_view = (dra or DraIndex(None)).node(
        name_of(node), deploy.get(PLUGIN_COMPONENT) == "true", operands.get(PLUGIN_COMPONENT)
    )
    return {
        "name": name_of(node),
        "gpu": gpu_labels(labels),
        "mode": node_mode(capacity, dra_view["devices_total"]),
        "capacity": capacity,
        "allocatable": _gpu_resources(status.get("allocatable")),
        "taints": [
            {"key": t.get("key"), "value": t.get("value"), "effect": t.get("effect")} for t in spec.get("taints") or []
        ],
        "unschedulable": bool(spec.get("unschedulable")),
        "ready": conditions.get("Ready", {}).get("status") == "True",
        "conditions": conditions,
        "quarantine": quarantine_evidence(node, markers() if known is None else known),
        "upgrade_state": labels.get(UPGRADE_STATE_LABEL),
        "upgrade_skip": is_true(labels.get(UPGRADE_SKIP_LABEL)),
        "deploy": deploy,
        "labels": {k: v for k, v in labels.items() if k.startswith("nvidia.com/") or "10de" in k},
        "kubelet_version": info.get("kubeletVersion"),
        "kernel_version": info.get("kernelVersion"),
        "os_image": info.get("osImage"),
        "container_runtime_version": info.get("containerRuntimeVersion"),
        "operands": operands,
        "dra": dra_view,
        "operands_missing": missing,
        # The operator labels a GPU node (gpu.present and the deploy labels, together) before its DaemonSets place
        # pods there: until then the node is not ready, even with no operand pod to wait for.
        "operands_ready": labels.get(PRESENT_LABEL) == "true"
        and not missing
        and all(operand_ok(s) for s in operands.values()),
        # some operand is not ready and waiting will not change that (operand_pods.operand_stuck): a wait for the
        # operands can stop, the checks name the layer
        "operands_stuck": any(operand_stuck(s) for s in operands.values()),
    }


def _cr_summary(obj):
    meta = meta_of(obj)
    status = obj.get("status") or {}
    return {
        "name": meta.get("name"),
        "state": status.get("state"),
        "ready": status.get("state") == "ready",
        "conditions": _condition_list(status.get("conditions")),
        "generation": meta.get("generation"),
        "creation_timestamp": meta.get("creationTimestamp"),
    }


def cluster_policy_view(policies, name=None):
    """The summary of :func:`.operator_names.cluster_policy_in_use` (``name``: the ``cluster_policy`` option), or
    None."""
    obj = cluster_policy_in_use(policies, name)
    if obj is None:
        return None
    spec = obj.get("spec") or {}
    driver = spec.get("driver") or {}
    view = _cr_summary(obj)
    view.update(
        {
            "driver": {
                "enabled": driver.get("enabled"),
                "version": driver.get("version"),
                "repository": driver.get("repository"),
                "use_nvidia_driver_crd": bool(driver.get("useNvidiaDriverCRD")),
                "upgrade_policy": driver.get("upgradePolicy"),
            },
            "mig_strategy": (spec.get("mig") or {}).get("strategy"),
            # NRI plugin mode (26.3+): the toolkit's NRI plugin injects the GPUs; no RuntimeClass, no runtime handler
            "cdi": {
                "enabled": (spec.get("cdi") or {}).get("enabled"),
                "nri_plugin": (spec.get("cdi") or {}).get("nriPluginEnabled") is True,
            },
            "namespace": (obj.get("status") or {}).get("namespace"),
        }
    )
    return view


def gpu_cluster_view(obj):
    """The summary of a GPUCluster (26.7+; ``kind`` says which object it is), or None."""
    return dict(_cr_summary(obj), kind="GPUCluster") if obj else None


def nvidia_driver_view(obj):
    spec = obj.get("spec") or {}
    view = _cr_summary(obj)
    view.update(
        {
            "driver_type": spec.get("driverType"),
            "version": spec.get("version"),
            "repository": spec.get("repository"),
            "default": bool(spec.get("default")),
            "node_selector": spec.get("nodeSelector") or {},
            "use_precompiled": spec.get("usePrecompiled"),
            "kernel_module_type": spec.get("kernelModuleType"),
            "upgrade_policy": spec.get("upgradePolicy"),
        }
    )
    return view


def _add(counter, key, amount=1):
    if key is not None:
        counter[key] = counter.get(key, 0) + amount


def totals(nodes, unscheduled_operands=()):
    """Fleet totals over node views (a list)."""
    out = {
        "nodes": len(nodes),
        "nodes_ready": 0,
        "nodes_unschedulable": 0,
        "nodes_operands_ready": 0,
        "nodes_operands_stuck": 0,
        "gpu_capacity": 0,
        "gpu_allocatable": 0,
        "mig_capacity": {},
        "mig_allocatable": {},
        "products": {},
        "driver_versions": {},
        "upgrade_states": {},
        "operand_pods": len(unscheduled_operands),
        "operand_pods_not_ready": sum(1 for s in unscheduled_operands if not operand_ok(s)),
        "operand_pods_unscheduled": len(unscheduled_operands),
        "modes": {},
        "dra_devices": 0,
        "dra_devices_allocated": 0,
        "dra_devices_free": 0,
        "dra_devices_tainted": 0,
    }
    for node in nodes:
        out["nodes_ready"] += node["ready"]
        out["nodes_unschedulable"] += node["unschedulable"]
        out["nodes_operands_ready"] += node["operands_ready"]
        out["nodes_operands_stuck"] += node["operands_stuck"]
        for field, target in (("capacity", "gpu_capacity"), ("allocatable", "gpu_allocatable")):
            value = node[field].get(GPU_RESOURCE)
            if isinstance(value, int):
                out[target] += value
            for res, amount in node[field].items():
                if res.startswith(MIG_RESOURCE_PREFIX) and isinstance(amount, int):
                    _add(out["mig_" + field], res, amount)
        _add(out["products"], node["gpu"]["product"])
        _add(out["driver_versions"], node["gpu"]["driver_version"])
        _add(out["upgrade_states"], node["upgrade_state"])
        _add(out["modes"], node["mode"])
        for key in ("total", "allocated", "free", "tainted"):
            out["dra_devices" + ("" if key == "total" else "_" + key)] += node["dra"]["devices_" + key]
        out["operand_pods"] += len(node["operands"])
        out["operand_pods_not_ready"] += sum(1 for s in node["operands"].values() if not operand_ok(s))
    return out


#: How much per-node detail the view returns, as the coverage of ``(nodes, node_summary)``: ``every`` node, only
#: the nodes with a ``problem`` (:func:`node_problems`), or ``no`` node. ``totals`` always cover every node.
NODE_DETAIL = {
    "all": ("every", "every"),
    "summary": ("problem", "every"),
    "problems": ("problem", "problem"),
    "none": ("no", "every"),
}


def node_problems(view):
    """Why a node view needs a closer look, as short codes in a fixed order; empty for a healthy node."""
    checks = (
        ("not-ready", not view["ready"]),
        ("unschedulable", view["unschedulable"]),
        ("foreign-quarantine", bool(view["quarantine"])),
        ("operands-not-ready", not view["operands_ready"]),
        ("operands-missing", bool(view["operands_missing"])),
        ("upgrade-failed", view["upgrade_state"] == "upgrade-failed"),
        ("dra", bool(view["dra"]["problems"])),
    )
    return [code for code, failing in checks if failing]


def node_summary(view):
    """The compact line of one node view: mode, readiness, GPU counts and :func:`node_problems`."""
    return {
        "mode": view["mode"],
        "ready": view["ready"],
        "unschedulable": view["unschedulable"],
        "operands_ready": view["operands_ready"],
        "operands_stuck": view["operands_stuck"],
        "gpu_capacity": view["capacity"].get(GPU_RESOURCE),
        "gpu_allocatable": view["allocatable"].get(GPU_RESOURCE),
        "dra_devices": view["dra"]["devices_total"],
        "problems": node_problems(view),
    }


def _kept(summaries, coverage):
    """The names of the nodes that ``coverage`` (``every``, ``problem`` or ``no``) keeps."""
    if coverage == "every":
        return set(summaries)
    return {name for name, line in summaries.items() if coverage == "problem" and line["problems"]}


@dataclass(frozen=True)
class ViewOptions:
    """How :func:`cluster_view` shapes the view: with ``gpu_nodes_only`` nodes failing :func:`is_gpu_node` are dropped
    (used when no label selector narrowed the LIST server-side; a node that publishes DRA devices counts as a GPU
    node); ``node_detail`` (one of :data:`NODE_DETAIL`) picks the nodes kept in ``nodes`` (the full view) and in
    ``node_summary``; ``quarantine_markers`` adds remediation markers to the known ones (each node view's
    ``quarantine``); ``cluster_policy`` names the ClusterPolicy in use (None: the one the operator reconciles)."""

    gpu_nodes_only: bool = True
    node_detail: str = "all"
    quarantine_markers: Sequence = ()
    cluster_policy: Optional[str] = None


def cluster_view(lists, options=ViewOptions()):
    """Everything the module returns except request counts and the server version, from the raw objects ``lists``
    (the keys of ``cluster_read.read_lists``; a missing key reads None) shaped as ``options`` (a
    :class:`ViewOptions`) says.

    ``nodes`` and ``pods`` are lists of raw dicts; ``cluster_policies``/``nvidia_drivers`` are lists or None (None:
    the CRD is not installed); ``dra``: a ``dra_view.DraIndex`` (None: DRA not read); ``sandbox_events`` the
    FailedCreatePodSandBox events of the operand pods (None: not read).
    """
    nodes, cluster_policies, nvidia_drivers = lists["nodes"], lists.get("cluster_policies"), lists.get("nvidia_drivers")
    cluster_policy, node_detail = options.cluster_policy, options.node_detail
    dra = lists.get("dra") or DraIndex(None)
    known = markers(options.quarantine_markers)
    by_node, unscheduled = operands_by_node(lists["pods"], lists.get("sandbox_events"))
    required = required_operands(cluster_policy_in_use(cluster_policies, cluster_policy))
    views = []
    for node in nodes:
        if options.gpu_nodes_only and not (is_gpu_node(node) or name_of(node) in dra.by_node):
            continue
        views.append(node_view(node, by_node.get(name_of(node)), required, dra, known))
    views.sort(key=lambda v: v["name"] or "")
    peer_shortfalls(views)
    if node_detail not in NODE_DETAIL:
        raise ArgumentError("node_detail must be one of %s, not %r" % (", ".join(NODE_DETAIL), node_detail))
    summaries = {v["name"]: node_summary(v) for v in views}
    in_nodes, in_summary = (_kept(summaries, coverage) for coverage in NODE_DETAIL[node_detail])
    return {
        "nodes": {v["name"]: v for v in views if v["name"] in in_nodes},
        "node_summary": {name: line for name, line in summaries.items() if name in in_summary},
        "cluster_policy": cluster_policy_view(cluster_policies, cluster_policy),
        "nvidia_drivers": sorted((nvidia_driver_view(d) for d in nvidia_drivers or []), key=lambda d: d["name"] or ""),
        "crds": {
            "clusterpolicies.nvidia.com": cluster_policies is not None,
            "nvidiadrivers.nvidia.com": nvidia_drivers is not None,
        },
        "unscheduled_operands": unscheduled,
        "dra": cluster_dra(dra, views),
        "totals": totals(views, unscheduled),
    }
