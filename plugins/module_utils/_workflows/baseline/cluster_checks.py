# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change incompatibly at any
# time, including in a patch release. Do not use it elsewhere.

"""Cluster checks of the Kubernetes version, NFD, monitoring, the RuntimeClass, PodSecurity and RBAC."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.operator_names import DEFAULT_NAMESPACE
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator import compat
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline.facts import fact
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline.model import (
    bad,
    check,
    na,
    ok,
)


@check("k8s.version", "cluster", "fail", "The Kubernetes version is in the target release's range")
def _k8s_version(cluster, hosts, opts):
    v = fact(cluster, "kubernetes_version", "git_version")
    rng = opts["release"]["kubernetes"]
    if not v:
        return na("the Kubernetes version was not read")
    if compat.in_range(v, rng):
        return ok("Kubernetes %s is in %s-%s for operator %s" % (v, rng[0], rng[1], opts["release"]["release"]))
    return bad(
        "Kubernetes %s is outside %s-%s, the range of operator %s" % (v, rng[0], rng[1], opts["release"]["release"]),
        "Pick an operator release whose range includes %s, or upgrade Kubernetes into %s-%s." % (v, rng[0], rng[1]),
    )


def operator_namespace(cluster, opts):
    """The operator namespace: the option, else the one gpu_preflight_info found (``_clients.operator_names``)."""
    return opts["operator_namespace"] or (cluster.get("namespace") or {}).get("name") or DEFAULT_NAMESPACE


@check("nfd.existing", "cluster", "warn", "No second NFD is deployed next to the chart's")
def _nfd(cluster, hosts, opts):
    nfd = cluster.get("nfd") or {}
    namespace = operator_namespace(cluster, opts)
    foreign = [
        "%s/%s" % (d["namespace"], d["name"]) for d in nfd.get("daemonsets") or [] if d.get("namespace") != namespace
    ]
    if not foreign:
        return ok("no NFD outside %s" % namespace)
    if not opts["nfd_enabled"]:
        return ok("NFD runs (%s) and the chart's is disabled (nfd.enabled=false)" % ", ".join(foreign))
    return bad(
        "NFD already runs (%s) and nfd.enabled is true: two NFDs fight over the node labels" % ", ".join(foreign),
        "Install with nfd.enabled=false (gpu_baseline_nfd_enabled: false).",
    )


@check("servicemonitor.crd", "cluster", "fail", "The ServiceMonitor CRD exists when the ServiceMonitor is on")
def _sm_crd(cluster, hosts, opts):
    if not opts["service_monitor_enabled"] or not opts["dcgm_exporter_enabled"]:
        return na("dcgmExporter.serviceMonitor.enabled is false")
    if opts["release"]["service_monitor_without_crd"] != "cluster_policy_not_ready":
        return na("operator %s skips a missing CRD (see servicemonitor.scrape)" % opts["release"]["release"])
    if fact(cluster, "crds", "servicemonitors.monitoring.coreos.com"):
        return ok("servicemonitors.monitoring.coreos.com exists")
    return bad(
        "serviceMonitor is enabled but servicemonitors.monitoring.coreos.com is missing: operator %s leaves the "
        "ClusterPolicy notReady" % opts["release"]["release"],
        "Install the Prometheus Operator CRDs first, or set dcgmExporter.serviceMonitor.enabled=false.",
    )


@check("servicemonitor.scrape", "cluster", "warn", "DCGM metrics reach Prometheus through the ServiceMonitor")
def _sm_scrape(cluster, hosts, opts):
    if not opts["service_monitor_enabled"] or not opts["dcgm_exporter_enabled"]:
        return na("dcgmExporter.serviceMonitor.enabled is false")
    if opts["release"]["service_monitor_without_crd"] == "cluster_policy_not_ready":
        return na("see servicemonitor.crd")
    if fact(cluster, "crds", "servicemonitors.monitoring.coreos.com"):
        return ok("servicemonitors.monitoring.coreos.com exists")
    return bad(
        "serviceMonitor is enabled but the ServiceMonitor CRD is missing: operator %s skips it and no "
        "Prometheus Operator scrapes DCGM" % opts["release"]["release"],
        "Install the Prometheus Operator, or set dcgmExporter.serviceMonitor.enabled=false and scrape "
        "nvidia-dcgm-exporter:9400/metrics another way.",
    )


@check("runtimeclass.nvidia", "cluster", "fail", "The operator's RuntimeClass is absent or points at its handler")
def _runtime_class(cluster, hosts, opts):
    if opts["nri_plugin"]:
        return na("in NRI plugin mode (cdi.nriPluginEnabled) the operator needs no RuntimeClass or runtime handler")
    rc = cluster.get("runtime_class") or {}
    name = opts["runtime_class"]
    if rc.get("exists"):
        if rc.get("handler") == name:
            return ok("RuntimeClass %s has handler %s" % (name, rc.get("handler")))
        return bad(
            "RuntimeClass %s exists with handler %s; the toolkit configures handler %s"
            % (name, rc.get("handler"), name),
            "Delete the RuntimeClass %s so the operator recreates it, or set operator.runtimeClass to another name."
            % name,
        )
    if fact(cluster, "cluster_policy", "exists"):
        return bad(
            "the ClusterPolicy exists but RuntimeClass %s does not" % name,
            "Check the operator's log; it creates RuntimeClass %s when it reconciles the ClusterPolicy." % name,
        )
    return ok("RuntimeClass %s is absent; the operator creates it at install" % name)


@check("namespace.podsecurity", "cluster", "fail", "PodSecurity admits the privileged operands")
def _podsecurity(cluster, hosts, opts):
    ns = cluster.get("namespace") or {}
    name = operator_namespace(cluster, opts)
    if not ns.get("exists"):
        return ok("namespace %s does not exist yet; label it when it is created" % name)
    enforce = (ns.get("labels") or {}).get("pod-security.kubernetes.io/enforce")
    if enforce in (None, "privileged"):
        return ok("namespace %s enforce=%s" % (name, enforce or "unset (cluster default)"))
    return bad(
        "namespace %s enforces PodSecurity %s; the operand DaemonSets are privileged" % (name, enforce),
        "kubectl label namespace %s pod-security.kubernetes.io/enforce=privileged --overwrite (or psa.enabled=true)."
        % name,
    )


@check("rbac.permissions", "cluster", "fail", "The identities may do what the chart and the roles need")
def _rbac(cluster, hosts, opts):
    access = cluster.get("access") or []
    if not access:
        return na("no permission was checked")
    missing = ["%s: %s" % (a.get("identity"), perm_text(m)) for a in access for m in a.get("missing") or []]
    checked = sum(a.get("checked", 0) for a in access)
    if not missing:
        return ok("%d permission(s) allowed" % checked)
    return bad(
        "%d of %d permission(s) denied: %s" % (len(missing), checked, "; ".join(missing)),
        "Grant the permissions listed (docs/rbac.yml for the automation identity; the chart needs cluster-admin-"
        "like rights to install CRDs and RBAC) or run with an identity that has them.",
    )


def perm_text(p):
    res = p.get("resource", "")
    if p.get("subresource"):
        res += "/" + p["subresource"]
    if p.get("group"):
        res += "." + p["group"]
    where = " in namespace %s" % p["namespace"] if p.get("namespace") else ""
    return "%s %s%s" % (p.get("verb"), res, where)


@check("dcgm_exporter.enabled", "cluster", "warn", "The DCGM exporter is enabled")
def _dcgm(cluster, hosts, opts):
    cp = cluster.get("cluster_policy") or {}
    enabled = cp.get("dcgm_exporter_enabled") if cp.get("exists") else opts["dcgm_exporter_enabled"]
    where = "ClusterPolicy spec.dcgmExporter.enabled" if cp.get("exists") else "dcgmExporter.enabled"
    if enabled is not False:
        return ok("%s is true" % where)
    return bad(
        "%s is false: no GPU metrics" % where, "Set dcgmExporter.enabled=true (gpu_baseline_dcgm_exporter_enabled)."
    )
