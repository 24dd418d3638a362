# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""GPU Operator chart values synthesised from host facts, inventory and the cluster.

Two stages, so that each runs where its inputs are:

1. :func:`fleet_plan` (controller side, exposed as the ``gpuops.gpu_operator.operator_values`` filter) turns
   the GPU hosts' facts and inventory into ``values`` (``driver.enabled``, ``toolkit.env``), the custom
   ``taints`` of GPU nodes, the per-node labels to set (``nvidia.com/gpu.deploy.driver=false`` on hosts with a
   preinstalled driver) and the ``reasons`` for each decision.
2. :func:`effective_values` (in the ``gpu_operator`` module, which sees the chart and the cluster) adds the
   tolerations for those taints to the chart's default ``daemonsets.tolerations`` and NFD worker tolerations,
   ``nfd.enabled=false`` when NFD labels already exist without our release's NFD, and
   ``dcgmExporter.serviceMonitor.enabled`` = whether the ServiceMonitor CRD exists; then the user's explicit
   values on top (they always win). The result is what helm receives, and what the module returns.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.errors import GpuOpsError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import get_in

#: Node label that keeps the operator's driver pod off a node (reference §5).
DRIVER_DEPLOY_LABEL = "nvidia.com/gpu.deploy.driver"
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
#: Set by the MIG manager: pending, rebooting, then success or failed (reference §5).
MIG_STATE_LABEL = "nvidia.com/mig.config.state"
#: Operator-managed driver root; a driver library loaded from there is the operator's, not the host's.
OPERATOR_DRIVER_ROOT = "/run/nvidia/driver"
#: Label prefix NFD publishes; any node carrying one means NFD already runs in the cluster.
NFD_LABEL_PREFIX = "feature.node.kubernetes.io/"
SERVICE_MONITOR_CRD = "servicemonitors.monitoring.coreos.com"

#: ``toolkit.env`` per Kubernetes distribution (reference §3); kubeadm with stock containerd needs nothing.
TOOLKIT_ENV = {
    "kubeadm": [],
    "k3s": [
        ("CONTAINERD_CONFIG", "/var/lib/rancher/k3s/agent/etc/containerd/config.toml"),
        ("CONTAINERD_SOCKET", "/run/k3s/containerd/containerd.sock"),
    ],
    "rke2": [
        ("CONTAINERD_CONFIG", "/var/lib/rancher/rke2/agent/etc/containerd/config.toml.tmpl"),
        ("CONTAINERD_SOCKET", "/run/k3s/containerd/containerd.sock"),
    ],
    "microk8s": [
        ("CONTAINERD_CONFIG", "/var/snap/microk8s/current/args/containerd-template.toml"),
        ("CONTAINERD_SOCKET", "/var/snap/microk8s/common/run/containerd.sock"),
        ("RUNTIME_CONFIG_SOURCE", "file=/var/snap/microk8s/current/args/containerd.toml"),
    ],
    "k0s": [
        ("CONTAINERD_CONFIG", "/etc/k0s/containerd.d/nvidia.toml"),
        ("CONTAINERD_SOCKET", "/run/k0s/containerd.sock"),
    ],
}

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


class ValuesError(GpuOpsError):
    """Bad synthesis input; the message names it."""


def deep_merge(base, override):
    """A new dict: ``override`` on top of ``base``; nested dicts merge, everything else (lists too) replaces."""
    out = copy.deepcopy(base) if isinstance(base, dict) else {}
    for key, value in (override or {}).items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def nest(path, value):
    """``nest("a.b", 1)`` -> ``{"a": {"b": 1}}``."""
    out = value
    for part in reversed(path.split(".")):
        out = {part: out}
    return out


def nest_paths(flat):
    """``{"a.b": 1, "a.c": 2}`` -> ``{"a": {"b": 1, "c": 2}}``."""
    out = {}
    for path, value in sorted(flat.items()):
        out = deep_merge(out, nest(path, value))
    return out


# --------------------------------------------------------------------------------------------------
# Stage 1: host facts and inventory


def driver_preinstalled(host):
    """True/False from the inventory override, else from facts; None when nothing says.

    A host has a preinstalled driver when its kernel has the nvidia module loaded (``/proc/driver/nvidia/version``)
    and NVML was not loaded from the operator's driver root.
    """
    if host.get("driver_preinstalled") is not None:
        return bool(host["driver_preinstalled"])
    gpu_host = host.get("gpu_host") or {}
    loaded = (gpu_host.get("nvidia_driver") or {}).get("loaded")
    if loaded is None:
        return None
    library = (host.get("nvidia_gpu") or {}).get("library_path") or ""
    return bool(loaded) and OPERATOR_DRIVER_ROOT not in library


def driver_version(host):
    """The host's driver version from its facts (NVML's, else the kernel module's), or None when unknown."""
    version = (host.get("nvidia_gpu") or {}).get("driver_version")
    return version or ((host.get("gpu_host") or {}).get("nvidia_driver") or {}).get("version")


def distribution(host):
    if host.get("distribution"):
        return host["distribution"]
    return ((host.get("gpu_host") or {}).get("kubernetes") or {}).get("distribution")


def normalise_taint(taint, where):
    if not isinstance(taint, dict) or not taint.get("key"):
        raise ValuesError("taint %r in %s needs at least a key (and an effect)" % (taint, where))
    effect = taint.get("effect") or "NoSchedule"
    if effect not in TAINT_EFFECTS:
        raise ValuesError(
            "taint %s in %s has effect %r; use one of %s" % (taint["key"], where, effect, ", ".join(TAINT_EFFECTS))
        )
    out = {"key": str(taint["key"]), "effect": effect}
    if taint.get("value") not in (None, ""):
        out["value"] = str(taint["value"])
    return out


def fleet_plan(hosts, pools=None):
    """Stage 1. ``hosts``: list of dicts with ``node`` (Kubernetes node name), ``pool``, and any of
    ``driver_preinstalled``, ``distribution``, ``taints``, ``labels``, ``gpu_host`` and ``nvidia_gpu`` (the facts).
    ``pools``: ``{pool: {labels, taints, mig_config}}``. Returns ``values``, ``taints``, ``node_labels``,
    ``node_taints``, ``mig_configs``, ``driver_versions`` (node -> host driver version or None) and ``reasons``."""
    pools = pools or {}
    node_labels, node_taints, mig_configs, driver_versions, reasons = {}, {}, {}, {}, []
    taints = []
    preinstalled, operator_driver, unknown_driver = [], [], []
    distros = {}
    for host in hosts:
        node = host.get("node")
        if not node:
            raise ValuesError("host %r has no Kubernetes node name (set k8s_node_name in the inventory)" % host)
        pool_name = host.get("pool")
        pool = (pools.get(pool_name) or {}) if pool_name else {}
        if pool_name and pool_name not in pools and pools:
            reasons.append(
                "node %s: pool %s is not defined in the pools; only host variables apply" % (node, pool_name)
            )
        labels = dict(pool.get("labels") or {})
        labels.update(host.get("labels") or {})
        where = "pool %s" % pool_name if pool_name else "host %s" % node
        host_taints = [normalise_taint(t, where) for t in (pool.get("taints") or [])]
        host_taints += [normalise_taint(t, "host %s" % node) for t in (host.get("taints") or [])]
        mig = host.get("mig_config") or pool.get("mig_config")
        if mig:
            mig_configs[node] = mig  # applied once the MIG manager runs, not with the other labels
        driver_versions[node] = driver_version(host)
        state = driver_preinstalled(host)
        if state is True:
            preinstalled.append(node)
            labels[DRIVER_DEPLOY_LABEL] = "false"
        elif state is False:
            operator_driver.append(node)
        else:
            unknown_driver.append(node)
        if labels:
            node_labels[node] = {k: str(v) for k, v in labels.items()}
        if host_taints:
            node_taints[node] = host_taints
            for t in host_taints:
                if t not in taints:
                    taints.append(t)
        distros.setdefault(distribution(host) or "unknown", []).append(node)

    values = {}
    if preinstalled and not operator_driver and not unknown_driver:
        values["driver"] = {"enabled": False}
        reasons.append("driver.enabled=false: every GPU host has a preinstalled driver (%s)" % ", ".join(preinstalled))
    elif hosts:
        values["driver"] = {"enabled": True}
        if preinstalled:
            reasons.append(
                "mixed fleet: %s=false on %s (preinstalled driver); the operator installs the driver elsewhere"
                % (DRIVER_DEPLOY_LABEL, ", ".join(preinstalled))
            )
        if unknown_driver:
            reasons.append(
                "no driver facts for %s; treated as needing the operator's driver (set driver_preinstalled to "
                "override)" % ", ".join(unknown_driver)
            )

    known = {d: n for d, n in distros.items() if d != "unknown"}
    if len(known) == 1:
        distro = next(iter(known))
        env = TOOLKIT_ENV.get(distro)
        if env is None:
            reasons.append("distribution %s has no known toolkit.env; set toolkit.env yourself" % distro)
        elif env:
            values["toolkit"] = {"env": [{"name": k, "value": v} for k, v in env]}
            reasons.append(
                "toolkit.env for %s containerd paths (%s)" % (distro, ", ".join(name for name, _value in env))
            )
    elif len(known) > 1:
        reasons.append(
            "GPU hosts run different distributions (%s); toolkit.env is left to you (set it per distribution with "
            "one release per node group or a common path)"
            % "; ".join("%s: %s" % (d, ", ".join(n)) for d, n in sorted(known.items()))
        )
    if taints:
        reasons.append(
            "tolerations added for custom GPU node taints: %s"
            % ", ".join("%s:%s" % (t["key"], t["effect"]) for t in taints)
        )
    return {
        "values": values,
        "taints": taints,
        "node_labels": node_labels,
        "node_taints": node_taints,
        "mig_configs": mig_configs,
        "driver_versions": driver_versions,
        "reasons": reasons,
    }


# --------------------------------------------------------------------------------------------------
# Stage 2: chart defaults and cluster


def toleration_for(taint):
    tol = {"key": taint["key"], "effect": taint["effect"]}
    if taint.get("value") not in (None, ""):
        tol.update(operator="Equal", value=taint["value"])
    else:
        tol["operator"] = "Exists"
    return tol


def tolerated(tolerations, taint):
    """True when one of ``tolerations`` tolerates ``taint`` (key, value and effect, as the scheduler matches them)."""
    for tol in tolerations or []:
        if not isinstance(tol, dict):
            continue
        if tol.get("effect") not in (None, "", taint["effect"]):
            continue
        if tol.get("operator") == "Exists" and not tol.get("key"):
            return True
        if tol.get("key") != taint["key"]:
            continue
        if tol.get("operator", "Equal") == "Exists" or tol.get("value", "") == taint.get("value", ""):
            return True
    return False


def with_tolerations(defaults, taints):
    """``defaults`` (a chart's toleration list) plus one toleration per taint it does not already tolerate."""
    out = list(copy.deepcopy(defaults or []))
    for taint in taints:
        if not tolerated(out, taint):
            out.append(toleration_for(taint))
    return out


TOLERATION_PATHS = ("daemonsets.tolerations", "node-feature-discovery.worker.tolerations")


def effective_values(chart_defaults, user_values, fleet=None, cluster=None, deployed_values=None):
    """Stage 2: returns ``(values, reasons)``; ``values`` is exactly what helm gets.

    ``fleet`` is :func:`fleet_plan`'s result (``values`` and ``taints`` are used); ``cluster`` has
    ``nfd_labels`` (bool: some node carries an NFD label) and ``service_monitor_crd`` (bool), either None when
    not detected; ``deployed_values`` are the user-supplied values of the deployed release, if any (so that a
    decision taken at install time, like ``nfd.enabled``, stays put once our own NFD labels the nodes); None when
    no release is installed.
    """
    fleet = fleet or {}
    cluster = cluster or {}
    reasons = list(fleet.get("reasons") or [])
    auto = deep_merge({}, fleet.get("values") or {})
    taints = [normalise_taint(t, "fleet.taints") for t in fleet.get("taints") or []]
    if taints:
        for path in TOLERATION_PATHS:
            base = get_in(user_values, *path.split("."))
            if base is not None:
                continue  # the user's list wins whole
            auto = deep_merge(
                auto, nest(path, with_tolerations(get_in(chart_defaults, *path.split("."), default=[]), taints))
            )
    if deployed_values is not None:
        # An installed release keeps its NFD decision: once its own NFD runs, the labels are ours; and a release
        # installed with the chart default (NFD on) must not lose its NFD because NFD labelled the nodes.
        previous_nfd = get_in(deployed_values, "nfd", "enabled")
        if previous_nfd is not None:
            auto = deep_merge(auto, {"nfd": {"enabled": previous_nfd}})
    elif cluster.get("nfd_labels") is True:
        auto = deep_merge(auto, {"nfd": {"enabled": False}})
        reasons.append("nfd.enabled=false: nodes already carry NFD labels (%s*)" % NFD_LABEL_PREFIX)
    if cluster.get("service_monitor_crd") is not None:
        enabled = bool(cluster["service_monitor_crd"])
        auto = deep_merge(auto, {"dcgmExporter": {"serviceMonitor": {"enabled": enabled}}})
        reasons.append(
            "dcgmExporter.serviceMonitor.enabled=%s: the %s CRD %s"
            % (str(enabled).lower(), SERVICE_MONITOR_CRD, "exists" if enabled else "is not installed")
        )
    overridden = sorted(_overridden(auto, user_values or {}))
    if overridden:
        reasons.append("your values override the synthesised %s" % ", ".join(overridden))
    return deep_merge(auto, user_values or {}), reasons


def _overridden(auto, user, prefix=""):
    for key, value in auto.items():
        path = prefix + key
        if key not in user:
            continue
        if isinstance(value, dict) and isinstance(user[key], dict):
            yield from _overridden(value, user[key], path + ".")
        elif user[key] != value:
            yield path


def hosts_from_hostvars(hostvars, names, node_var="k8s_node_name", pool_var="gpu_pool"):
    """Stage-1 host dicts from Ansible ``hostvars`` for inventory hosts ``names``."""
    hosts = []
    for name in names:
        hv = hostvars.get(name) or {}
        facts = hv.get("ansible_facts") or {}
        hosts.append(
            {
                "node": hv.get(node_var) or name,
                "pool": hv.get(pool_var),
                "driver_preinstalled": hv.get("gpu_driver_preinstalled"),
                "distribution": hv.get("gpu_k8s_distribution"),
                "labels": hv.get("gpu_node_labels"),
                "taints": hv.get("gpu_node_taints"),
                "mig_config": hv.get("gpu_mig_config"),
                "gpu_host": facts.get("gpu_host") or hv.get("gpu_host"),
                "nvidia_gpu": facts.get("nvidia_gpu") or hv.get("nvidia_gpu"),
            }
        )
    return hosts
