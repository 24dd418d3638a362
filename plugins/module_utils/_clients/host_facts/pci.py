# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""PCI and device facts from sysfs and /dev: NVIDIA GPUs and NVSwitches, IOMMU, /dev/nvidia* and /dev/char links."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

NVIDIA_VENDOR = "0x10de"


def pci_kind(cls):
    """``nvswitch``, ``gpu`` or ``other`` from a PCI class code (``0x068000``, ``0x030200``, ...)."""
    if cls.startswith("0x0680"):
        return "nvswitch"
    return "gpu" if cls.startswith("0x0302") or cls.startswith("0x0300") else "other"


def read_pci(r, facts):
    """NVIDIA PCI devices (address, device id, class, kind, bound driver, NUMA node, IOMMU group) and counts."""
    base = "sys/bus/pci/devices"
    devices = []
    for addr in r.listdir(base):
        d = "%s/%s" % (base, addr)
        vendor = (r.read(d + "/vendor") or "").strip().lower()
        if vendor != NVIDIA_VENDOR:
            continue
        cls = (r.read(d + "/class") or "").strip().lower()
        device = (r.read(d + "/device") or "").strip().lower() or None
        numa = (r.read(d + "/numa_node") or "").strip()
        driver = r.readlink(d + "/driver")
        group = r.readlink(d + "/iommu_group")
        devices.append(
            {
                "address": addr,
                "device_id": device,
                "class": cls or None,
                "kind": pci_kind(cls),
                "driver": os.path.basename(driver) if driver else None,
                "numa_node": int(numa) if re.match(r"^-?\d+$", numa) else None,
                "iommu_group": os.path.basename(group) if group else None,
            }
        )
    return {
        "devices": devices,
        "gpu_count": sum(1 for d in devices if d["kind"] == "gpu"),
        "nvswitch_count": sum(1 for d in devices if d["kind"] == "nvswitch"),
    }


def read_iommu(r, facts):
    """Whether IOMMU groups exist, how many, and the IOMMU kernel arguments."""
    args = facts["cmdline"]["args"]
    groups = r.listdir("sys/kernel/iommu_groups")
    return {
        "enabled": bool(groups),
        "groups": len(groups),
        "cmdline": {k: args[k] for k in ("intel_iommu", "amd_iommu", "iommu") if k in args},
    }


def read_devices(r, facts):
    """/dev/nvidia* nodes, their /dev/char links, and the nodes without one."""
    nodes = [n for n in r.listdir("dev") if n.startswith("nvidia")]
    links = {}
    for name in r.listdir("dev/char"):
        target = r.readlink("dev/char/" + name)
        if target and os.path.basename(target).startswith("nvidia"):
            links[name] = target
    linked = {os.path.basename(t) for t in links.values()}
    return {
        "nodes": nodes,
        "char_links": links,
        "char_links_missing": sorted(n for n in nodes if n != "nvidia-caps" and n not in linked),
    }
