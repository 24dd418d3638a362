# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""Kubernetes distribution and container runtime facts: which distribution, which runtime (containerd, CRI-O,
docker), its config path and socket, and a summary of its parsed config (runtimes, default, nvidia, CDI)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fnmatch
import os

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.host_facts.reader import get_in

# distribution -> (containerd config candidates, socket, marker paths)
DISTRIBUTIONS = (
    (
        "rke2",
        ("var/lib/rancher/rke2/agent/etc/containerd/config.toml",),
        "/run/k3s/containerd/containerd.sock",
        ("etc/rancher/rke2", "var/lib/rancher/rke2"),
    ),
    (
        "k3s",
        ("var/lib/rancher/k3s/agent/etc/containerd/config.toml",),
        "/run/k3s/containerd/containerd.sock",
        ("etc/rancher/k3s", "var/lib/rancher/k3s"),
    ),
    (
        "microk8s",
        ("var/snap/microk8s/current/args/containerd-template.toml",),
        "/var/snap/microk8s/common/run/containerd.sock",
        ("var/snap/microk8s",),
    ),
    (
        "k0s",
        ("etc/k0s/containerd.toml", "etc/k0s/containerd.d/nvidia.toml"),
        "/run/k0s/containerd.sock",
        ("etc/k0s", "var/lib/k0s"),
    ),
    (
        "kubeadm",
        ("etc/containerd/config.toml",),
        "/run/containerd/containerd.sock",
        ("etc/kubernetes/kubelet.conf", "etc/kubernetes/manifests"),
    ),
)
TEMPLATES = {
    "rke2": "var/lib/rancher/rke2/agent/etc/containerd/config.toml.tmpl",
    "k3s": "var/lib/rancher/k3s/agent/etc/containerd/config.toml.tmpl",
}


def containerd_summary(cfg):
    """Runtimes, default runtime, CDI and cgroup driver from a parsed containerd config (v2 or v3)."""
    plugins = cfg.get("plugins") or {}
    version = cfg.get("version")
    cri = (
        (get_in(plugins, "io.containerd.cri.v1.runtime") if version == 3 else None)
        or get_in(plugins, "io.containerd.grpc.v1.cri")
        or {}
    )
    ctd = cri.get("containerd") or {}
    runtimes = ctd.get("runtimes") or {}
    nvidia = runtimes.get("nvidia") or {}
    return {
        "version": version,
        "runtimes": sorted(runtimes) if isinstance(runtimes, dict) else [],
        "default_runtime": ctd.get("default_runtime_name"),
        "nvidia_runtime": bool(nvidia),
        "nvidia_runtime_binary": get_in(nvidia, "options", "BinaryName"),
        "systemd_cgroup": get_in(runtimes, ctd.get("default_runtime_name") or "runc", "options", "SystemdCgroup"),
        "cdi_enabled": cri.get("enable_cdi"),
        "imports": cfg.get("imports") or [],
    }


def merge_containerd(base, extra):
    """``base`` summary with an imported file's ``extra`` summary applied over it."""
    for key in ("runtimes",):
        base[key] = sorted(set(base[key]) | set(extra[key]))
    for key in ("default_runtime", "nvidia_runtime_binary", "systemd_cgroup", "cdi_enabled"):
        if extra[key] is not None:
            base[key] = extra[key]
    base["nvidia_runtime"] = base["nvidia_runtime"] or extra["nvidia_runtime"]
    return base


def crio_summary(cfg):
    """Runtimes, default runtime and cgroup manager from a parsed CRI-O config."""
    runtime = get_in(cfg, "crio", "runtime") or {}
    runtimes = runtime.get("runtimes") or {}
    return {
        "runtimes": sorted(runtimes),
        "default_runtime": runtime.get("default_runtime"),
        "nvidia_runtime": "nvidia" in runtimes,
        "cgroup_manager": runtime.get("cgroup_manager"),
    }


def docker_summary(cfg):
    """Runtimes, default runtime and CDI from a parsed docker daemon.json."""
    runtimes = cfg.get("runtimes") or {}
    return {
        "runtimes": sorted(runtimes) if isinstance(runtimes, dict) else [],
        "default_runtime": cfg.get("default-runtime"),
        "nvidia_runtime": "nvidia" in runtimes,
        "cdi_enabled": get_in(cfg, "features", "cdi"),
    }


def read_kubernetes(r, facts):
    """The Kubernetes distribution found by its marker paths, and the node's role where the layout tells it."""
    for name, _configs, _socket, markers in DISTRIBUTIONS:
        if any(r.exists(m) for m in markers):
            role = None
            if name == "kubeadm":
                role = "control-plane" if r.exists("etc/kubernetes/manifests/kube-apiserver.yaml") else "worker"
            elif name in ("k3s", "rke2"):
                role = "server" if r.exists("var/lib/rancher/%s/server" % name) else "agent"
            return {"distribution": name, "role": role}
    return {"distribution": None, "role": None}


def read_container_runtime(r, facts):
    """The distribution's containerd (its config and imports), else CRI-O, else docker."""
    distro = facts["kubernetes"]["distribution"]
    out = {
        "name": None,
        "config_path": None,
        "socket": None,
        "socket_present": False,
        "config": None,
        "template_path": None,
    }
    for name, configs, socket, _markers in DISTRIBUTIONS:
        if distro and name != distro:
            continue
        present = [c for c in configs if r.exists(c)]
        if present or distro == name:
            cfg = (present or configs)[0]
            out.update({"name": "containerd", "config_path": "/" + cfg, "socket": socket})
            break
    if out["name"] is None or not r.exists(out["config_path"]):
        if r.exists("etc/crio/crio.conf") or r.exists("etc/crio/crio.conf.d"):
            return _crio(r, out)
        if r.exists("etc/docker/daemon.json") and not r.exists("etc/containerd/config.toml"):
            return _docker(r, out)
    if out["name"] == "containerd":
        out["socket_present"] = r.exists(out["socket"])
        if distro in TEMPLATES and r.exists(TEMPLATES[distro]):
            out["template_path"] = "/" + TEMPLATES[distro]
        cfg = r.toml(out["config_path"])
        if isinstance(cfg, dict):
            summary = containerd_summary(cfg)
            for pattern in summary["imports"]:
                for extra in _glob(r, pattern):
                    sub = r.toml(extra)
                    if isinstance(sub, dict):
                        summary = merge_containerd(summary, containerd_summary(sub))
            out["config"] = summary
    return out


def _glob(r, pattern):
    d, pat = os.path.split(pattern.lstrip("/"))
    return ["%s/%s" % (d, n) for n in r.listdir(d) if fnmatch.fnmatch(n, pat)]


def _crio(r, out):
    out.update({"name": "cri-o", "config_path": "/etc/crio/crio.conf", "socket": "/run/crio/crio.sock"})
    out["socket_present"] = r.exists(out["socket"])
    summary = crio_summary(r.toml("etc/crio/crio.conf") or {})
    for name in r.listdir("etc/crio/crio.conf.d"):
        extra = crio_summary(r.toml("etc/crio/crio.conf.d/" + name) or {})
        summary["runtimes"] = sorted(set(summary["runtimes"]) | set(extra["runtimes"]))
        summary["nvidia_runtime"] = summary["nvidia_runtime"] or extra["nvidia_runtime"]
        summary["default_runtime"] = extra["default_runtime"] or summary["default_runtime"]
    out["config"] = summary
    return out


def _docker(r, out):
    out.update({"name": "docker", "config_path": "/etc/docker/daemon.json", "socket": "/run/docker.sock"})
    out["socket_present"] = r.exists(out["socket"])
    cfg = r.json("etc/docker/daemon.json")
    out["config"] = docker_summary(cfg) if cfg is not None else None
    return out
