# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""NVIDIA software on the host: CDI specs, the NVIDIA Container Toolkit config, the GPU Operator's driver root and
validation status files, and the Fabric Manager unit."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.host_facts.reader import (
    parse_assignments,
    tri_any,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.nvml import (
    DEFAULT_DRIVER_ROOT,
    LIB_DIRS,
    SONAME,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import get_in

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
    """(``{KEY: value}``, count of lines that are not ``KEY=value``) of a validator status file."""
    return parse_assignments(text)


def read_cdi(r, facts):
    """CDI spec files (path, kind, cdiVersion, device names) and whether an ``nvidia.com/*`` spec is among them
    (None when a spec or directory could not be read)."""
    specs, listed, seen = [], True, set()
    for d in CDI_DIRS:
        where = r.resolve(d)
        if where is not None and where in seen:
            continue  # /var/run is /run on most hosts: one directory, listed once
        seen.add(where)
        names = r.listdir(d)
        listed = listed and names is not None
        for name in names or []:
            rel = "%s/%s" % (d, name)
            if name.endswith(".json"):
                specs.append(_cdi_spec(r, rel, r.json(rel)))
            elif name.endswith((".yaml", ".yml")):
                specs.append(_cdi_spec(r, rel, r.yaml(rel)))
    kinds = [str(s["kind"]).startswith("nvidia.com/") if s["kind"] else None for s in specs]
    return {"specs": specs if listed else None, "nvidia": tri_any(kinds + ([] if listed else [None]))}


def _cdi_spec(r, rel, data):
    """One spec's path, kind, version and device names; the kind is required (a problem when absent)."""
    out = {"path": "/" + rel, "kind": None, "cdi_version": None, "devices": None}
    if data is None:
        return out
    kind, devices = data.get("kind"), data.get("devices")
    if not isinstance(kind, str) or not isinstance(devices, list):
        r.problem(rel, "malformed", "a CDI spec needs a kind and a devices list")
        return out
    out.update(
        {
            "kind": kind,
            "cdi_version": str(data.get("cdiVersion")) if data.get("cdiVersion") is not None else None,
            "devices": [str(d.get("name")) for d in devices if isinstance(d, dict) and d.get("name") is not None],
        }
    )
    return out


def read_toolkit(r, facts):
    """The first NVIDIA Container Toolkit config found: its mode, CDI default kind, ldconfig and driver root."""
    rel, installed = r.first(TOOLKIT_CONFIGS)
    cfg = (r.toml(rel) if rel else None) or {}
    ncr = cfg.get("nvidia-container-runtime") or {}
    return {
        "installed": installed,
        "config_path": "/" + rel if rel else None,
        "mode": get_in(ncr, "mode"),
        "cdi_default_kind": get_in(ncr, "modes", "cdi", "default-kind"),
        "ldconfig": get_in(cfg, "nvidia-container-cli", "ldconfig"),
        "root": get_in(cfg, "nvidia-container-cli", "root"),
    }


def read_operator_driver(r, facts):
    """The GPU Operator's driver root (/run/nvidia/driver): whether it exists and where its NVML library is."""
    root = DEFAULT_DRIVER_ROOT.lstrip("/")
    libs = ["%s/%s/%s" % (root, d, SONAME) for d in LIB_DIRS]
    present = r.present(root)
    lib = r.first_resolved(libs) if present else None  # a dangling link is no library
    return {"root": DEFAULT_DRIVER_ROOT, "present": present, "nvml_library": "/" + lib if lib else None}


def read_validations(r, facts):
    """The GPU Operator's validation status files: which components are ready, and the driver's KEY=value file."""
    files = r.listdir(VALIDATIONS_DIR)
    ready = {c: "%s-ready" % c in files if files is not None else None for c in VALIDATION_COMPONENTS}
    rel = VALIDATIONS_DIR + "/driver-ready"
    driver, bad = parse_kv(r.read(rel) or "")
    if bad:
        r.problem(rel, "malformed", "%d line(s) are not KEY=value" % bad)
    return {
        "present": r.present(VALIDATIONS_DIR),
        "files": files,
        "ready": ready,
        "all_ready": all(ready.values()) if files is not None else None,
        "driver_ready": driver if driver and not bad else None,
    }


def read_fabric_manager(r, facts):
    """Where the Fabric Manager unit is, whether it is enabled, and whether NVSwitches make it required."""
    path, installed = r.first("%s/%s" % (d, FABRIC_MANAGER_UNIT) for d in UNIT_DIRS)
    wants = r.listdir("etc/systemd/system")
    enabled = None
    if wants is not None:
        enabled = tri_any(
            r.present("etc/systemd/system/%s/%s" % (w, FABRIC_MANAGER_UNIT)) for w in wants if w.endswith(".wants")
        )
    pci = facts["pci"]
    required = pci["nvswitch_count"] > 0 if pci["nvswitch_count"] is not None else None
    if required is False and pci["unresolved_count"]:
        required = None  # an unresolved device may be an NVSwitch
    return {
        "installed": installed,
        "unit_path": "/" + path if path else None,
        "enabled": enabled,
        "required": required,
    }
