# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""NVIDIA software on the host: CDI specs, the NVIDIA Container Toolkit config, GPU Operator validation status
files and the Fabric Manager unit."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.host_facts.reader import get_in

CDI_DIRS = ("etc/cdi", "var/run/cdi", "run/cdi")
TOOLKIT_CONFIGS = (
    "etc/nvidia-container-runtime/config.toml",
    "usr/local/nvidia/toolkit/.config/nvidia-container-runtime/config.toml",
)
VALIDATIONS_DIR = "run/nvidia/validations"
VALIDATION_COMPONENTS = ("driver", "toolkit", "cuda", "plugin")
FABRIC_MANAGER_UNIT = "nvidia-fabricmanager.service"
UNIT_DIRS = ("etc/systemd/system", "lib/systemd/system", "usr/lib/systemd/system")


def parse_kv(text):
    """KEY=value lines (validator status files)."""
    out = {}
    for line in text.splitlines():
        key, sep, value = line.strip().partition("=")
        if sep and key:
            out[key] = value.strip()
    return out


def read_cdi(r, facts):
    """CDI spec files (path and kind) and whether an ``nvidia.com/*`` spec is among them."""
    specs = []
    for d in CDI_DIRS:
        for name in r.listdir(d):
            rel = "%s/%s" % (d, name)
            kind = None
            if name.endswith(".json"):
                data = r.json(rel)
                kind = data.get("kind") if data else None
            elif name.endswith((".yaml", ".yml")):
                kind = _yaml_kind(r, rel)
            else:
                continue
            specs.append({"path": "/" + rel, "kind": kind})
    return {"specs": specs, "nvidia": any((s["kind"] or "").startswith("nvidia.com/") for s in specs)}


def _yaml_kind(r, rel):
    text = r.read(rel)
    if text is None:
        return None
    try:
        import yaml
    except ImportError:
        return None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        r.problem(rel, "malformed", str(exc)[:200])
        return None
    return data.get("kind") if isinstance(data, dict) else None


def read_toolkit(r, facts):
    """The first NVIDIA Container Toolkit config found: its mode, CDI default kind, ldconfig and driver root."""
    for rel in TOOLKIT_CONFIGS:
        if r.exists(rel):
            cfg = r.toml(rel) or {}
            ncr = cfg.get("nvidia-container-runtime") or {}
            return {
                "installed": True,
                "config_path": "/" + rel,
                "mode": ncr.get("mode"),
                "cdi_default_kind": get_in(ncr, "modes", "cdi", "default-kind"),
                "ldconfig": get_in(cfg, "nvidia-container-cli", "ldconfig"),
                "root": get_in(cfg, "nvidia-container-cli", "root"),
            }
    return {
        "installed": False,
        "config_path": None,
        "mode": None,
        "cdi_default_kind": None,
        "ldconfig": None,
        "root": None,
    }


def read_validations(r, facts):
    """The GPU Operator's validation status files: which components are ready, and the driver's KEY=value file."""
    files = r.listdir(VALIDATIONS_DIR)
    ready = {c: "%s-ready" % c in files for c in VALIDATION_COMPONENTS}
    driver = r.read(VALIDATIONS_DIR + "/driver-ready")
    return {
        "present": r.exists(VALIDATIONS_DIR),
        "files": files,
        "ready": ready,
        "all_ready": all(ready.values()),
        "driver_ready": parse_kv(driver) if driver else None,
    }


def read_fabric_manager(r, facts):
    """Whether the Fabric Manager unit is installed and enabled, and whether NVSwitches make it required."""
    installed = any(r.exists("%s/%s" % (d, FABRIC_MANAGER_UNIT)) for d in UNIT_DIRS)
    enabled = any(
        r.exists("etc/systemd/system/%s/%s" % (w, FABRIC_MANAGER_UNIT))
        for w in r.listdir("etc/systemd/system")
        if w.endswith(".wants")
    )
    return {"installed": installed, "enabled": enabled, "required": facts["pci"]["nvswitch_count"] > 0}
