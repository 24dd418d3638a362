# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""PCI and device facts from sysfs and /dev: NVIDIA GPUs and NVSwitches, NUMA nodes, IOMMU, /dev/nvidia* and
/dev/char links, and VFIO passthrough. A device or link that cannot be resolved is kept, with a problem."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.host_facts.modprobe import (
    is_blacklisted,
    option,
    option_known,
)

NVIDIA_VENDOR = "0x10de"
PCI_DEVICES = "sys/bus/pci/devices"
NUMA_ONLINE = "sys/devices/system/node/online"
HEX_RE = re.compile(r"^0x[0-9a-f]+$")
INT_RE = re.compile(r"^-?\d+$")
RANGES_RE = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*$")
IOMMU_ARGS = ("intel_iommu", "amd_iommu", "iommu")


def pci_kind(cls):
    """``nvswitch``, ``gpu`` or ``other`` from a PCI class code (``0x068000``, ``0x030200``, ...)."""
    if cls.startswith("0x0680"):
        return "nvswitch"
    return "gpu" if cls.startswith("0x0302") or cls.startswith("0x0300") else "other"


def parse_ranges(text):
    """``[0, 1, 3]`` from a sysfs range list ``0-1,3``; None when it is not one."""
    text = text.strip()
    if not RANGES_RE.match(text):
        return None
    out = []
    for part in text.split(","):
        lo, _sep, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def _sysfs_value(r, rel, pattern):
    """The stripped, lower-case content of a sysfs attribute; None (a problem) when absent or not ``pattern``."""
    raw = r.read(rel, required=True)
    value = (raw or "").strip().lower()
    if raw is not None and not pattern.match(value):
        r.problem(rel, "malformed", value[:40])
    return value if pattern.match(value) else None


def _device(r, addr):
    """One PCI device's facts, or None when it is resolved and not NVIDIA's. A device whose link dangles or whose
    vendor is unreadable is kept with ``kind`` None."""
    d = "%s/%s" % (PCI_DEVICES, addr)
    out = {
        "address": addr,
        "device_id": None,
        "class": None,
        "kind": None,
        "driver": None,
        "numa_node": None,
        "iommu_group": None,
    }
    if r.resolve(d) is None:  # dangling (the reader's problem) or unreadable
        return out
    vendor = _sysfs_value(r, d + "/vendor", HEX_RE)
    if vendor is not None and vendor != NVIDIA_VENDOR:
        return None
    cls = _sysfs_value(r, d + "/class", HEX_RE)
    numa = _sysfs_value(r, d + "/numa_node", INT_RE)
    driver, group = r.readlink(d + "/driver"), r.readlink(d + "/iommu_group")
    out.update(
        {
            "device_id": _sysfs_value(r, d + "/device", HEX_RE),
            "class": cls,
            "kind": pci_kind(cls) if cls and vendor else None,
            "driver": os.path.basename(driver) if driver else None,
            "numa_node": int(numa) if numa is not None else None,
            "iommu_group": os.path.basename(group) if group else None,
        }
    )
    return out


def read_pci(r, facts):
    """NVIDIA PCI devices (address, device id, class, kind, bound driver, NUMA node, IOMMU group) and counts;
    ``unresolved_count`` devices are kept with ``kind`` None (they may be NVIDIA's)."""
    addrs = r.listdir(PCI_DEVICES)
    devices = [dev for dev in (_device(r, a) for a in addrs or []) if dev is not None]
    kinds = [d["kind"] for d in devices]
    return {
        "devices": devices if addrs is not None else None,
        "gpu_count": kinds.count("gpu") if addrs is not None else None,
        "nvswitch_count": kinds.count("nvswitch") if addrs is not None else None,
        "unresolved_count": kinds.count(None) if addrs is not None else None,
    }


def read_numa(r, facts):
    """The NUMA nodes online (``sys/devices/system/node/online``) and their count."""
    raw = r.read(NUMA_ONLINE, required=True)
    nodes = parse_ranges(raw) if raw is not None else None
    if raw is not None and nodes is None:
        r.problem(NUMA_ONLINE, "malformed", raw[:40])
    return {"node_count": len(nodes) if nodes is not None else None, "nodes": nodes}


def read_iommu(r, facts):
    """Whether IOMMU groups exist, how many, and the IOMMU kernel arguments."""
    groups = r.listdir("sys/kernel/iommu_groups")
    args = facts["cmdline"]["args"]
    return {
        "enabled": bool(groups) if groups is not None else None,
        "groups": len(groups) if groups is not None else None,
        "cmdline": {k: args[k] for k in IOMMU_ARGS if k in args} if args is not None else None,
        "group_devices": _group_devices(r, groups),
    }


def _group_devices(r, groups):
    """``{group: [PCI addresses]}`` from ``sys/kernel/iommu_groups/<n>/devices`` (sysfs has no dot files: a
    ``.keep`` is not a device); None when the groups are unknown, a group's list None when its directory could
    not be read."""
    if groups is None:
        return None
    out = {}
    for group in groups:
        names = r.listdir("sys/kernel/iommu_groups/%s/devices" % group)
        out[group] = [n for n in names if not n.startswith(".")] if names is not None else None
    return out


def read_devices(r, facts):
    """/dev/nvidia* nodes, their /dev/char links, the nodes without one and the links whose node is gone."""
    nodes, names = r.listdir("dev"), r.listdir("dev/char")
    links, dangling = {}, []
    for name in names or []:
        target = r.readlink("dev/char/" + name)
        if target and os.path.basename(target).startswith("nvidia"):
            links[name] = target
            if not r.resolves("dev/char/" + name):  # the reader records the dangling link
                dangling.append(name)
    linked = {os.path.basename(t) for t in links.values()}
    nvidia = None if nodes is None else [n for n in nodes if n.startswith("nvidia")]
    known = names is not None and nvidia is not None
    return {
        "nodes": nvidia,
        "char_links": links if names is not None else None,
        "char_links_missing": sorted(n for n in nvidia if n != "nvidia-caps" and n not in linked) if known else None,
        "char_links_dangling": dangling if names is not None else None,
    }


def read_vfio(r, facts):
    """Passthrough: NVIDIA devices bound to vfio-pci with their IOMMU group and /dev/vfio node, the /dev/vfio
    entries, the vfio-pci ids (kernel argument or modprobe.d) and whether nvidia and nouveau are blacklisted."""
    entries = r.listdir("dev/vfio")
    pci = facts["pci"]
    bound = [
        {
            "address": d["address"],
            "kind": d["kind"],
            "iommu_group": d["iommu_group"],
            "dev_node": d["iommu_group"] in entries if entries is not None and d["iommu_group"] else None,
        }
        for d in pci["devices"] or []
        if d["driver"] == "vfio-pci"
    ]
    known = pci["devices"] is not None and not pci["unresolved_count"]  # an unresolved device may be bound
    return {
        "module_loaded": facts["modules"]["vfio_pci"]["loaded"],
        "devices": bound if pci["devices"] is not None else None,
        "gpu_count": sum(1 for d in bound if d["kind"] == "gpu") if known else None,
        "dev_entries": entries,
        "ids": _vfio_ids(r, facts),
        "nvidia_blacklisted": is_blacklisted(r, facts, "nvidia"),
        "nouveau_blacklisted": is_blacklisted(r, facts, "nouveau"),
    }


def _vfio_ids(r, facts):
    """The ``ids`` option of vfio-pci from the command line, else modprobe.d; None when neither could be read
    whole."""
    args = facts["cmdline"]["args"]
    ids = (args or {}).get("vfio-pci.ids") or (args or {}).get("vfio_pci.ids") or option(r, "vfio_pci", "ids")
    if ids:
        return str(ids).split(",")
    return [] if args is not None and option_known(r) else None
