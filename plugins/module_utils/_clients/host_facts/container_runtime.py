# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""Kubernetes distribution and container runtime facts: which distribution, which runtime (containerd, CRI-O,
docker) and whether it is the distribution's own or the system's, its config path, socket and template, a
summary of its parsed config, and docker's daemon.json when docker is installed beside it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fnmatch
import os

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.host_facts.reader import tri_any
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.host_facts.runtime_configs import (
    containerd_summary,
    crio_summary,
    deep_merge,
    docker_summary,
    file_settings,
    template_toml,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.host_facts.runtime_versions import (
    runtime_version,
)

SYSTEM_CONTAINERD = ("etc/containerd/config.toml", "/run/containerd/containerd.sock")
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
        (SYSTEM_CONTAINERD[0],),
        SYSTEM_CONTAINERD[1],
        ("etc/kubernetes/kubelet.conf", "etc/kubernetes/manifests"),
    ),
)
#: Distributions whose agent may run the system containerd instead (``container-runtime-endpoint``).
RANCHER = ("k3s", "rke2")
TEMPLATE = "var/lib/rancher/%s/agent/etc/containerd/config.toml.tmpl"
CRIO = ("etc/crio/crio.conf", "etc/crio/crio.conf.d", "/run/crio/crio.sock")
DOCKER = ("etc/docker/daemon.json", "/run/docker.sock")


def read_kubernetes(r, facts):
    """The Kubernetes distribution found by its marker paths, and the node's role where the layout tells it."""
    for name, _configs, _socket, markers in DISTRIBUTIONS:
        if any(r.exists(m) for m in markers):
            role = None
            if name == "kubeadm":
                role = _either(r.present("etc/kubernetes/manifests/kube-apiserver.yaml"), "control-plane", "worker")
            elif name in RANCHER:
                role = _either(r.present("var/lib/rancher/%s/server" % name), "server", "agent")
            return {"distribution": name, "role": role}
    return {"distribution": None, "role": None}


def _either(state, yes, no):
    return None if state is None else (yes if state else no)


def rancher_endpoint(r, distro):
    """(``container-runtime-endpoint`` of /etc/rancher/<d>/config.yaml and its config.yaml.d drop-ins, all read)."""
    base = "etc/rancher/%s/config.yaml" % distro
    drop_ins = r.listdir(base + ".d")
    files = [base] + ["%s.d/%s" % (base, n) for n in drop_ins or [] if n.endswith((".yaml", ".yml"))]
    endpoint, known = None, drop_ins is not None
    for rel in files:
        cfg = r.yaml(rel)
        if cfg is None:
            known = known and r.absent(rel)
        elif cfg.get("container-runtime-endpoint"):
            endpoint = str(cfg["container-runtime-endpoint"])
    return endpoint, known


def _containerd(r, distro):
    """(config path, socket, source) of the containerd in use; source None when the distribution's config is
    unreadable, so whose containerd runs is unknown."""
    for name, configs, socket, _markers in DISTRIBUTIONS:
        if distro and name != distro:
            continue
        present = [c for c in configs if r.exists(c)]
        if not present and distro != name:
            continue
        source = "system" if name == "kubeadm" else "distribution"
        if name in RANCHER:
            endpoint, known = rancher_endpoint(r, name)
            path = (endpoint or "").replace("unix://", "", 1)
            if path and path != socket:
                return SYSTEM_CONTAINERD[0], path, "system"
            source = source if known else None
        return (present or configs)[0], socket, source
    return None


def read_container_runtime(r, facts):
    """The containerd in use (the distribution's or the system's: its config, drop-ins and template), else CRI-O,
    else docker; docker's daemon.json is summarised beside any of them."""
    distro = facts["kubernetes"]["distribution"]
    daemon = r.json(DOCKER[0])
    out = {
        "name": None,
        "config_path": None,
        "config_source": None,
        "socket": None,
        "socket_present": None,
        "config": None,
        "template_path": None,
        "template": None,
        "docker": docker_summary(daemon) if daemon is not None else None,
        "version": None,
        "version_source": None,
        "config_files": None,
        "system_config_present": r.present(SYSTEM_CONTAINERD[0]),
    }
    found = _containerd(r, distro)
    ctd = r.present(found[0]) if found else False
    crio = tri_any([r.present(CRIO[0]), r.present(CRIO[1])])
    docker = r.present(DOCKER[0])
    if ctd or found and (crio, docker) == (False, False):
        out.update({"name": "containerd", "config_path": "/" + found[0], "socket": found[1], "config_source": found[2]})
        out["config"], out["config_files"] = _containerd_config(r, found[0])
        out.update(_version(r, "containerd", distro))
        if distro in RANCHER and found[2] == "distribution" and r.exists(TEMPLATE % distro):
            out["template_path"] = "/" + TEMPLATE % distro
            out["template"] = _template(r, TEMPLATE % distro)
    elif crio:
        out.update({"name": "cri-o", "config_path": "/" + CRIO[0], "socket": CRIO[2], "config_source": "system"})
        out["config"] = _crio_config(r)
        out.update(_version(r, "cri-o", None))
    elif docker:
        out.update({"name": "docker", "config_path": "/" + DOCKER[0], "socket": DOCKER[1], "config_source": "system"})
        out["config"] = out["docker"]
    if out["socket"] and out["config_source"]:  # unknown whose containerd runs: unknown whether its socket is up
        out["socket_present"] = r.present(out["socket"])
    return out


def _version(r, name, distro):
    found = runtime_version(r, name, distro)
    return {"version": found["version"], "version_source": found["source"]}


def _containerd_config(r, rel):
    """(the summary of a containerd config with its ``imports`` merged in, the settings of each file: the root
    first, then every import in the order containerd reads them); (None, None) when one is missing, unreadable
    or malformed (a problem)."""
    cfg = r.toml(rel, required=True)
    if not isinstance(cfg, dict):
        return None, None
    merged, files = cfg, [file_settings("/" + rel, cfg)]
    imports = cfg.get("imports") if isinstance(cfg.get("imports"), list) else []
    for pattern in imports:
        matches = _glob(r, os.path.join("/" + os.path.dirname(rel), str(pattern)))  # relative to the root config
        if matches is None:
            return None, None
        for extra in matches:
            sub = r.toml(extra)
            if sub is None:
                return None, None
            merged = deep_merge(merged, {k: v for k, v in sub.items() if k not in ("version", "imports")})
            files.append(file_settings("/" + extra, sub))
    return containerd_summary(merged), files


def _template(r, rel):
    """``{extends_base, config}`` of a k3s/RKE2 containerd template; config None when it is not TOML once its
    Go actions are set aside."""
    text = r.read(rel)
    if text is None:
        return None
    toml_text, base = template_toml(text)
    cfg = r.parse_toml(rel, toml_text) if toml_text.strip() else {}
    return {"extends_base": base, "config": containerd_summary(cfg) if cfg is not None else None}


def _glob(r, pattern):
    """The files an ``imports`` pattern names; None when its directory could not be listed."""
    d, pat = os.path.split(pattern.lstrip("/"))
    names = r.listdir(d)
    return None if names is None else ["%s/%s" % (d, n) for n in names if fnmatch.fnmatch(n, pat)]


def _crio_config(r):
    """The summary of crio.conf with the crio.conf.d drop-ins merged over it in name order; None when one of them
    could not be read."""
    cfg = r.toml(CRIO[0])
    if cfg is None and not r.absent(CRIO[0]):
        return None
    names = r.listdir(CRIO[1])
    if names is None:
        return None
    for name in names:
        if name.endswith(".conf"):
            sub = r.toml("%s/%s" % (CRIO[1], name))
            if sub is None:
                return None
            cfg = deep_merge(cfg or {}, sub)
    return crio_summary(cfg or {})
