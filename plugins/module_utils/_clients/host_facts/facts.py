# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The entry point: :func:`check_host_root` refuses a path that is not a host's root, :func:`collect` runs every
reader in :data:`READERS` over one host root."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.host_facts import (
    container_runtime,
    kernel,
    nvidia_stack,
    pci,
    system,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.host_facts.reader import Reader
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.errors import ArgumentError

FIX = "set host_root to where the host's / is mounted (/ on the host itself, for example /host in a container)"

#: (fact, reader) in reading order. A reader is ``read(r, facts)``: ``r`` is the :class:`Reader`, ``facts`` the
#: facts read so far (a reader may use an earlier one); it returns its fact and records problems on ``r``.
READERS = (
    ("kernel", kernel.read_kernel),
    ("os", system.read_os),
    ("precompiled_driver", system.read_precompiled_driver),
    ("cmdline", kernel.read_cmdline),
    ("modules", kernel.read_modules),
    ("loaded_modules", kernel.read_loaded_modules),
    ("nouveau", kernel.read_nouveau),
    ("nvidia_driver", kernel.read_nvidia_driver),
    ("secure_boot", system.read_secure_boot),
    ("pci", pci.read_pci),
    ("numa", pci.read_numa),
    ("iommu", pci.read_iommu),
    ("devices", pci.read_devices),
    ("vfio", pci.read_vfio),
    ("kubernetes", container_runtime.read_kubernetes),
    ("container_runtime", container_runtime.read_container_runtime),
    ("cdi", nvidia_stack.read_cdi),
    ("container_toolkit", nvidia_stack.read_toolkit),
    ("operator_driver", nvidia_stack.read_operator_driver),
    ("validations", nvidia_stack.read_validations),
    ("fabric_manager", nvidia_stack.read_fabric_manager),
    ("unattended_upgrades", system.read_unattended_upgrades),
)


def check_host_root(root):
    """Raise :class:`ArgumentError` naming ``root`` and the fix when it is missing, not a directory, or has neither
    proc/sys nor etc in it (a typo in an inventory must not read as a host without GPUs)."""
    if not os.path.exists(root):
        raise ArgumentError("host_root %s is not a directory: it does not exist; %s" % (root, FIX))
    if not os.path.isdir(root):
        raise ArgumentError("host_root %s is not a directory: it is a file; %s" % (root, FIX))
    if not any(os.path.isdir(os.path.join(root, d)) for d in ("proc", "sys", "etc")):
        raise ArgumentError(
            "host_root %s does not look like a root file system (no proc, sys or etc in it); %s" % (root, FIX)
        )


def collect(host_root="/"):
    """The GPU host facts of the host mounted at ``host_root``: ``host_root``, one fact per reader, then
    ``problems`` (every source that was missing, unreadable or malformed)."""
    r = Reader(host_root)
    facts = {"host_root": r.root}
    for key, read in READERS:
        facts[key] = read(r, facts)
    facts["problems"] = r.problems
    return facts
