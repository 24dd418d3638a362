# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change incompatibly at any
# time, including in a patch release. Do not use it elsewhere.

"""What several checks read: nested facts, the driver loaded on a host and the driver the operator will install."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import get_in as fact  # noqa: F401 - the checks' reader
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator import compat

#: The host file that says whether an NVIDIA kernel module is loaded, and which.
DRIVER_SOURCE = "/proc/driver/nvidia/version"


def operator_managed(opts):
    """True when the operator's driver container provides the driver."""
    return opts["driver_policy"] == "operator-managed"


def target_driver(opts):
    """The driver the operator will install: the one asked for, else the release's default."""
    return opts["driver_version"] or compat.default_driver(opts["operator_version"])


def host_driver(ctx):
    """(version, flavor) of the driver loaded on the host, from /proc/driver/nvidia/version, else NVML."""
    drv = fact(ctx, "gpu_host", "nvidia_driver", default={})
    if drv.get("loaded"):
        return drv.get("version"), drv.get("flavor")
    if fact(ctx, "nvidia_gpu", "available"):
        return fact(ctx, "nvidia_gpu", "driver_version"), None
    return None, None


def unknown_in(d, *keys):
    """True when one of ``keys`` is in the fact dict ``d`` with the value None: gpu_host_facts could not read its
    source (a key that is not there at all is not unknown, only absent)."""
    return isinstance(d, dict) and any(k in d and d[k] is None for k in keys)


def driver_unknown(ctx):
    """True when nothing tells whether an NVIDIA driver is loaded: /proc/driver/nvidia/version could not be read
    and NVML did not answer."""
    return unknown_in(fact(ctx, "gpu_host", "nvidia_driver"), "loaded") and not fact(ctx, "nvidia_gpu", "available")


def is_host_driver(ctx):
    """True when the loaded driver is the host's own, not the operator's driver container."""
    ready = fact(ctx, "gpu_host", "validations", "driver_ready", default={}) or {}
    return str(ready.get("IS_HOST_DRIVER", "true")).lower() != "false"


def architectures(ctx):
    """The GPU architectures NVML reports on the host, sorted."""
    gpus = fact(ctx, "nvidia_gpu", "gpus", default=[]) or []
    return sorted({g.get("architecture") for g in gpus if g.get("architecture")})
