# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change incompatibly at any
# time, including in a patch release. Do not use it elsewhere.

"""Cluster checks of the GPU nodes: every host mapped to a node, node state, labels and taints, runtime version."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import taint_text
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator import compat
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline.facts import fact
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline.model import (
    bad,
    check,
    na,
    ok,
)


def _mapped_nodes(cluster, hosts):
    """Inventory host -> its node in the cluster view (None when the cluster has no such node)."""
    nodes = cluster.get("nodes") or {}
    return {h: nodes.get(v.get("node_name") or h) for h, v in hosts.items()}


@check("hosts.gathered", "cluster", "fail", "Every inventory GPU host ran the host part")
def _hosts_gathered(cluster, hosts, opts):
    missing = sorted(h for h, v in hosts.items() if not v.get("gpu_host") and not v.get("baseline"))
    if not missing:
        return ok("%d host(s) have host facts" % len(hosts))
    return bad(
        "no host facts for: %s (unreachable, or the host part did not run)" % ", ".join(missing),
        "Run the role's host part (gpuops.gpu_operator.gpu_baseline) on these hosts before the cluster part.",
        subjects=missing,
    )


@check("nodes.mapped", "cluster", "fail", "Every inventory GPU host maps to a Kubernetes node")
def _nodes_mapped(cluster, hosts, opts):
    mapped = _mapped_nodes(cluster, hosts)
    unmapped = sorted(h for h, n in mapped.items() if n is None)
    if not unmapped:
        return ok("%d host(s) map to nodes" % len(mapped))
    return bad(
        "no Kubernetes node for: %s"
        % ", ".join("%s (node %s)" % (h, hosts[h].get("node_name") or h) for h in unmapped),
        "Set the node name variable (gpu_baseline_node_name_var, default k8s_node_name) for these hosts, or join "
        "them to the cluster.",
        subjects=unmapped,
    )


@check("nodes.cordoned", "cluster", "warn", "No GPU node is already cordoned")
def _cordoned(cluster, hosts, opts):
    names = sorted(n["name"] for n in (cluster.get("nodes") or {}).values() if n.get("gpu") and n.get("unschedulable"))
    if not names:
        return ok("no GPU node is cordoned")
    return bad(
        "cordoned GPU node(s): %s; they count against driver.upgradePolicy.maxUnavailable" % ", ".join(names),
        "Uncordon them (kubectl uncordon <node>) or account for them in maxUnavailable before upgrading.",
        subjects=names,
    )


@check("nodes.upgrade_failed", "cluster", "fail", "No GPU node is in upgrade-failed")
def _upgrade_failed(cluster, hosts, opts):
    names = sorted(
        n["name"] for n in (cluster.get("nodes") or {}).values() if n.get("upgrade_state") == "upgrade-failed"
    )
    if not names:
        return ok("no node is upgrade-failed")
    return bad(
        "node(s) in upgrade-failed: %s" % ", ".join(names),
        "Fix the cause (driver pod logs), then kubectl label node <node> "
        "nvidia.com/gpu-driver-upgrade-state=upgrade-required --overwrite.",
        subjects=names,
    )


@check("nodes.gpu_separation", "cluster", "fail", "GPU nodes carry the declared labels and taints; CPU nodes do not")
def _separation(cluster, hosts, opts):
    nodes = cluster.get("nodes") or {}
    mapped = _mapped_nodes(cluster, hosts)
    wrong, subjects = [], []
    declared_any = set()
    for h, node in sorted(mapped.items()):
        if node is None:
            continue
        labels = hosts[h].get("gpu_node_labels") or {}
        taints = hosts[h].get("gpu_node_taints") or []
        declared_any.update("label %s=%s" % kv for kv in labels.items())
        declared_any.update("taint " + taint_text(t) for t in taints)
        have = node.get("all_labels") or {}
        miss = ["label %s=%s" % (k, v) for k, v in sorted(labels.items()) if str(have.get(k)) != str(v)]
        miss += ["taint " + taint_text(t) for t in taints if not _has_taint(node, t)]
        if miss:
            wrong.append("GPU node %s lacks %s" % (node["name"], ", ".join(miss)))
            subjects.append(h)
    if not declared_any:
        return na("the inventory declares no GPU node labels or taints")
    gpu_names = {n["name"] for n in mapped.values() if n}
    for node in sorted(nodes.values(), key=lambda n: n["name"]):
        if node["name"] in gpu_names or node.get("gpu"):
            continue
        have = node.get("all_labels") or {}
        carried = [d for d in sorted(declared_any) if _carries(node, have, d)]
        if carried:
            wrong.append("CPU node %s carries %s" % (node["name"], ", ".join(carried)))
            subjects.append(node["name"])
    if not wrong:
        return ok("%d GPU node(s) set apart by %s" % (len(gpu_names), ", ".join(sorted(declared_any))))
    return bad(
        "; ".join(wrong),
        "Label/taint the GPU nodes as the inventory declares (kubectl label/taint node ...) and remove those "
        "labels/taints from CPU nodes.",
        subjects=subjects,
    )


def _has_taint(node, t):
    return any(
        x.get("key") == t.get("key")
        and x.get("effect") == t.get("effect")
        and (not t.get("value") or x.get("value") == t.get("value"))
        for x in node.get("taints") or []
    )


def _carries(node, labels, declared):
    if declared.startswith("label "):
        k, _sep, v = declared[len("label ") :].partition("=")
        return str(labels.get(k)) == v
    return any("taint " + taint_text(t) == declared for t in node.get("taints") or [])


@check("runtime.version", "cluster", "warn", "Each GPU node's container runtime is in the release's range")
def _runtime_version(cluster, hosts, opts):
    rel = opts["release"]
    wrong, seen, subjects = [], 0, []
    for h, node in sorted(_mapped_nodes(cluster, hosts).items()):
        if node is None or not node.get("container_runtime_version"):
            continue
        seen += 1
        crv = node["container_runtime_version"]
        if crv.startswith("containerd://"):
            if not compat.in_range(crv, rel["containerd"]):
                wrong.append("%s %s" % (node["name"], crv))
                subjects.append(h)
        elif crv.startswith("cri-o://"):
            os_ = fact(hosts[h], "gpu_host", "os", default={})
            if not rel["cri_o"] or os_.get("version_id") in (rel.get("cri_o_unsupported_os") or {}).get(
                os_.get("id"), []
            ):
                wrong.append("%s %s on %s %s" % (node["name"], crv, os_.get("id"), os_.get("version_id")))
                subjects.append(h)
    if not seen:
        return na("no node reports its container runtime")
    if not wrong:
        return ok("%d node(s) run a runtime operator %s lists" % (seen, rel["release"]))
    return bad(
        "outside operator %s's validated runtimes (containerd %s-%s): %s"
        % (rel["release"], rel["containerd"][0], rel["containerd"][1], ", ".join(wrong)),
        "Upgrade containerd into %s-%s; an unvalidated runtime may work but is not supported."
        % tuple(rel["containerd"]),
        subjects=subjects,
    )


def _nri_left_off(rt, runtime_version):
    """True when a host's containerd config leaves NRI to the default and the node runs containerd 1.x (off)."""
    unset = rt.get("name") == "containerd" and rt.get("config") is not None and rt["config"].get("nri_enabled") is None
    return unset and compat.version_tuple(runtime_version) < (2, 0)


@check("runtime.nri_version", "cluster", "fail", "Each GPU node's runtime supports NRI plugin mode when it is on")
def _nri_version(cluster, hosts, opts):
    if not opts["nri_plugin"]:
        return na("gpu_baseline_nri_plugin is false (cdi.nriPluginEnabled)")
    wrong, seen, subjects, needs, left_off = [], 0, [], set(), False
    for h, node in sorted(_mapped_nodes(cluster, hosts).items()):
        if node is None or not node.get("container_runtime_version"):
            continue
        seen += 1
        crv = node["container_runtime_version"]
        supported, need = compat.nri_runtime(opts["operator_version"], crv)
        rt = fact(hosts[h], "gpu_host", "container_runtime", default={}) or {}
        if not supported:
            wrong.append("%s %s" % (node["name"], crv))
            needs.add(need)
        elif _nri_left_off(rt, crv):
            wrong.append(
                "%s %s (its default leaves NRI off; %s does not enable it)" % (node["name"], crv, rt["config_path"])
            )
            needs.add("NRI enabled in containerd 1.7's config")
            left_off = True
        else:
            continue
        subjects.append(h)
    if not seen:
        return na("no node reports its container runtime")
    if not wrong:
        return ok("%d node(s) run a runtime that supports NRI plugin mode" % seen)
    return bad(
        "NRI plugin mode needs %s: %s" % ("; ".join(sorted(needs)), ", ".join(wrong)),
        "Upgrade the runtime as named (or the operator to 26.3.2+ for CRI-O), or install without "
        "cdi.nriPluginEnabled (gpu_baseline_nri_plugin: false) to use the RuntimeClass."
        + (
            " On containerd 1.7 enable NRI in the config named (runtime.nri_enabled gives the change)."
            if left_off
            else ""
        ),
        subjects=subjects,
    )
