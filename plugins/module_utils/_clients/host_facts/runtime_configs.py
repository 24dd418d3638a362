# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""Container runtime configs as parsed documents: summaries of containerd (v2, v3), CRI-O and docker configs with
every NVIDIA runtime handler, drop-in merging, and the Go template k3s and RKE2 render containerd's config from."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import get_in

GO_COMMENT_RE = re.compile(r"\{\{-?\s*/\*.*?\*/\s*-?\}\}", re.S)
GO_BASE_RE = re.compile(r'\{\{-?\s*template\s+"base"\s+\.\s*-?\}\}')
GO_ACTION_RE = re.compile(r"\{\{.*?\}\}", re.S)


def deep_merge(base, extra):
    """``base`` with ``extra`` applied over it, tables merged key by key (containerd imports, CRI-O drop-ins)."""
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def _dict(value):
    return value if isinstance(value, dict) else {}


def _is_nvidia(name, binary):
    return "nvidia" in str(name) or "nvidia" in str(binary or "")


def containerd_summary(cfg):
    """Runtimes, the default runtime, CDI, NRI, the cgroup driver and each NVIDIA handler (binary, runtime type,
    SystemdCgroup) of a parsed containerd config (v2, or v3 with its CRI runtime plugin)."""
    plugins = cfg.get("plugins") or {}
    version = cfg.get("version")
    cri = _cri(plugins, version)
    ctd = _dict(cri.get("containerd"))
    runtimes = _dict(ctd.get("runtimes"))
    default = ctd.get("default_runtime_name")
    handlers = {
        name: {
            "binary": get_in(rt, "options", "BinaryName"),
            "runtime_type": get_in(rt, "runtime_type"),
            "systemd_cgroup": get_in(rt, "options", "SystemdCgroup"),
        }
        for name, rt in sorted(runtimes.items())
        if _is_nvidia(name, get_in(rt, "options", "BinaryName"))
    }
    cgroup = get_in(runtimes, default or "runc", "options", "SystemdCgroup")
    return {
        "version": version,
        "runtimes": sorted(runtimes),
        "default_runtime": default,
        "nvidia_runtime": "nvidia" in runtimes,
        "nvidia_runtime_binary": (handlers.get("nvidia") or {}).get("binary"),
        "nvidia_runtimes": handlers,
        "systemd_cgroup": cgroup if cgroup is not None else get_in(runtimes, "runc", "options", "SystemdCgroup"),
        "cdi_enabled": cri.get("enable_cdi"),
        "nri_enabled": _containerd_nri(plugins, version),
        "imports": cfg.get("imports") if isinstance(cfg.get("imports"), list) else [],
    }


def file_settings(path, cfg):
    """What one containerd config file sets itself: its ``version`` (None when it has none: containerd reads it as
    version 1), the runtimes and default runtime, CDI and NRI (None where the file leaves them unset)."""
    plugins = _dict(cfg.get("plugins"))
    cri = _cri(plugins, cfg.get("version"))
    ctd = _dict(cri.get("containerd"))
    disable = get_in(plugins, "io.containerd.nri.v1.nri", "disable")
    return {
        "path": path,
        "version": cfg.get("version"),
        "runtimes": sorted(_dict(ctd.get("runtimes"))),
        "default_runtime": ctd.get("default_runtime_name"),
        "cdi_enabled": _bool_or_none(cri.get("enable_cdi")),
        "nri_enabled": (not disable) if isinstance(disable, bool) else None,
    }


def _cri(plugins, version):
    """The CRI runtime plugin's table: ``io.containerd.cri.v1.runtime`` in a version 3 config, else (or when a
    version 3 file still uses the old name) ``io.containerd.grpc.v1.cri``."""
    return _dict(
        (get_in(plugins, "io.containerd.cri.v1.runtime") if version == 3 else None)
        or get_in(plugins, "io.containerd.grpc.v1.cri")
    )


def _containerd_nri(plugins, version):
    """Whether containerd's NRI plugin is on: its table's ``disable``, else containerd's default - on from 2.0 (the
    only containerd that reads a version 3 config), off in 1.7; None when a version 2 config leaves it to the
    default (which containerd runs it is the node's containerRuntimeVersion; never False by guess)."""
    disable = get_in(plugins, "io.containerd.nri.v1.nri", "disable")
    if isinstance(disable, bool):
        return not disable
    return True if version == 3 else None


def _bool_or_none(value):
    return value if isinstance(value, bool) else None


def crio_summary(cfg):
    """Runtimes, the default runtime, the cgroup manager, NRI (``[crio.nri] enable_nri``) and each NVIDIA handler
    (runtime_path, runtime_type; the cgroup manager is CRI-O's own) of a parsed CRI-O config."""
    runtime = _dict(get_in(cfg, "crio", "runtime"))
    runtimes = _dict(runtime.get("runtimes"))
    manager = runtime.get("cgroup_manager")
    return {
        "runtimes": sorted(runtimes),
        "default_runtime": runtime.get("default_runtime"),
        "nvidia_runtime": "nvidia" in runtimes,
        "nvidia_runtimes": {
            name: {
                "binary": get_in(rt, "runtime_path"),
                "runtime_type": get_in(rt, "runtime_type"),
                "systemd_cgroup": manager == "systemd" if manager else None,
            }
            for name, rt in sorted(runtimes.items())
            if _is_nvidia(name, get_in(rt, "runtime_path"))
        },
        "cgroup_manager": manager,
        # unset: CRI-O's default, on from 1.30 (NRI plugin mode needs 1.34); None, not False
        "nri_enabled": _bool_or_none(get_in(cfg, "crio", "nri", "enable_nri")),
    }


def docker_summary(cfg):
    """Runtimes, the default runtime, CDI and each NVIDIA handler (path, runtimeType; the cgroup driver is the
    daemon's ``exec-opts`` native.cgroupdriver) of a parsed docker daemon.json."""
    runtimes = _dict(cfg.get("runtimes"))
    opts = cfg.get("exec-opts") if isinstance(cfg.get("exec-opts"), list) else []
    drivers = [str(o).partition("=")[2] for o in opts if str(o).startswith("native.cgroupdriver=")]
    systemd = (drivers[-1] == "systemd") if drivers else None
    return {
        "runtimes": sorted(runtimes),
        "default_runtime": cfg.get("default-runtime"),
        "nvidia_runtime": "nvidia" in runtimes,
        "nvidia_runtimes": {
            name: {
                "binary": get_in(rt, "path"),
                "runtime_type": get_in(rt, "runtimeType"),
                "systemd_cgroup": systemd,
            }
            for name, rt in sorted(runtimes.items())
            if _is_nvidia(name, get_in(rt, "path"))
        },
        "cdi_enabled": get_in(cfg, "features", "cdi"),
    }


def template_toml(text):
    """(TOML text, extends base) of a k3s/RKE2 ``config.toml.tmpl``: Go comments ``{{/* */}}`` dropped, a line
    that is only actions dropped, an action inside a line kept as a string; ``{{ template "base" . }}`` means the
    generated config comes first."""
    text = GO_COMMENT_RE.sub("", text)
    base = GO_BASE_RE.search(text) is not None
    lines = []
    for line in text.splitlines():
        if not GO_ACTION_RE.sub("", line).strip():
            continue
        lines.append(GO_ACTION_RE.sub(lambda m, line=line: _quoted(line, m), line))
    return "\n".join(lines) + "\n", base


def _quoted(line, m):
    """An action inside a line: kept as is within a quoted value, else as a quoted string of its text."""
    inside = line[: m.start()].count('"') % 2 == 1
    return m.group(0) if inside else '"%s"' % m.group(0).replace('"', "'")
