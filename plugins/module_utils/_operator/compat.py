# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change incompatibly at any
# time, including in a patch release. Do not use it elsewhere.

"""Questions over the compatibility matrix in ``_compat_data`` (which holds the data and says why it is Python)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import re

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.errors import GpuOpsError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator import compat_data as data


class CompatError(GpuOpsError, ValueError):
    """A version the matrix cannot answer for; the message names the input and what is known."""


def version_tuple(version):
    """``"v1.34.2"`` -> ``(1, 34, 2)``; ``"containerd://1.7.27"`` -> ``(1, 7, 27)``; ``None`` -> ``()``."""
    text = str(version or "")
    if "://" in text:
        text = text.split("://", 1)[1]
    m = re.match(r"^\s*v?(\d+(?:\.\d+)*)", text)
    return tuple(int(p) for p in m.group(1).split(".")) if m else ()


def known_releases():
    return sorted(data.RELEASES, key=version_tuple)


def release_key(operator_version):
    """``"v25.10.1"`` -> ``"25.10"``; a release outside the matrix raises CompatError naming the known ones."""
    parts = version_tuple(operator_version)
    key = "%d.%d" % parts[:2] if len(parts) >= 2 else None
    if key not in data.RELEASES:
        raise CompatError(
            "operator version %r is not in the compatibility matrix (data %s); known releases: %s"
            % (operator_version, data.DATA_VERSION, ", ".join(known_releases()))
        )
    return key


def release(operator_version):
    """A copy of the release row, with ``release`` (the key) and ``data_version`` added."""
    key = release_key(operator_version)
    row = copy.deepcopy(data.RELEASES[key])
    row["release"] = key
    row["data_version"] = data.DATA_VERSION
    row["driver_branches"] = driver_branches(key)
    return row


def in_range(version, bounds):
    """True when ``version``'s major.minor lies in the inclusive ``[low, high]`` (major.minor each)."""
    v = version_tuple(version)[:2]
    return bool(v) and version_tuple(bounds[0])[:2] <= v <= version_tuple(bounds[1])[:2]


def k8s_supported(operator_version, k8s_version):
    return in_range(k8s_version, data.RELEASES[release_key(operator_version)]["kubernetes"])


def containerd_supported(operator_version, containerd_version):
    return in_range(containerd_version, data.RELEASES[release_key(operator_version)]["containerd"])


def os_supported(operator_version, os_id, version_id):
    versions = data.RELEASES[release_key(operator_version)]["os"].get(str(os_id or "").lower(), [])
    return str(version_id) in versions


def supported_drivers(operator_version):
    """Every driver the release lists: the chart's default, the matrix default, recommended and others."""
    row = data.RELEASES[release_key(operator_version)]
    out = [row["chart_default_driver"]["version"], row["default_driver"]]
    out += row["recommended_drivers"] + row["drivers"]
    return sorted(set(out), key=version_tuple, reverse=True)


def default_driver(operator_version):
    """The driver the release's chart installs when ``driver.version`` is not set."""
    return data.RELEASES[release_key(operator_version)]["chart_default_driver"]["version"]


def dra_driver(operator_version):
    """The version of the DRA driver (kubernetes-sigs/dra-driver-nvidia-gpu) the release deploys in GPUCluster mode;
    None for a release without GPUCluster mode (before 26.7)."""
    return data.RELEASES[release_key(operator_version)]["dra_driver"]


def driver_supported(operator_version, driver_version):
    """True when the driver is listed, or its branch (the major) is listed bare (``"570"`` = any 570.x)."""
    dv = version_tuple(driver_version)
    if not dv:
        return False
    for listed in supported_drivers(operator_version):
        lv = version_tuple(listed)
        if dv == lv or (len(lv) == 1 and dv[0] == lv[0]):
            return True
    return False


def driver_branch(driver_version):
    """``"580.159.04"`` -> ``"580"``; None when it is not a version."""
    parts = version_tuple(driver_version)
    return str(parts[0]) if parts else None


def driver_branches(operator_version):
    """The branches a release supports for a preinstalled driver: branch -> ``{drivers, minimum, designation,
    long_term}``. ``drivers`` are the release's driver containers on the branch (newest first); ``minimum`` is the
    earliest driver of the branch that this release or an earlier one lists; ``designation`` comes from
    ``DRIVER_BRANCHES`` (None when NVIDIA's page does not designate the branch)."""
    releases = known_releases()
    earlier = releases[: releases.index(release_key(operator_version)) + 1]
    out = {}
    for listed in supported_drivers(operator_version):
        out.setdefault(driver_branch(listed), {"drivers": []})["drivers"].append(listed)
    for branch, row in out.items():
        seen = [v for key in earlier for v in supported_drivers(key) if driver_branch(v) == branch]
        row["minimum"] = min(seen, key=version_tuple)
        row["designation"] = data.DRIVER_BRANCHES.get(branch, {}).get("designation")
        row["long_term"] = row["designation"] == "long-term support"
    return out


def nearest_driver(operator_version, driver_version):
    """The release's driver container for ``driver_version``: the newest on its branch, else the newest on the nearest
    supported branch above it (a fix goes forward), else on the newest branch below it."""
    branches = driver_branches(operator_version)
    major = int(driver_branch(driver_version) or 0)
    forward = [b for b in branches if int(b) >= major]
    branch = min(forward, key=int) if forward else max(branches, key=int)
    return branches[branch]["drivers"][0]


def nri_runtime(operator_version, runtime_version):
    """(supported, requirement) of a node's ``containerd://`` or ``cri-o://`` runtime in NRI plugin mode;
    ``requirement`` says what the release needs of that runtime."""
    row = data.NRI_PLUGIN
    if version_tuple(release_key(operator_version)) < version_tuple(row["first_release"]):
        return False, "NRI plugin mode from operator %s" % row["first_release"]
    v = version_tuple(runtime_version)
    if str(runtime_version).startswith("cri-o://"):
        crio = row["cri_o"]
        ok = version_tuple(operator_version) >= version_tuple(crio["operator_from"]) and v >= version_tuple(
            crio["from"]
        )
        return ok, "CRI-O >= %s with operator >= %s" % (crio["from"], crio["operator_from"])
    ranges = row["containerd"]
    ok = str(runtime_version).startswith("containerd://") and any(
        version_tuple(low) <= v and (high is None or v < version_tuple(high)) for low, high in ranges
    )
    return ok, "containerd %s" % " or ".join(
        "%s+" % low + (" (below %s)" % high if high else "") for low, high in ranges
    )


def containerd_config_max(containerd_version):
    """The highest containerd config ``version`` a containerd of ``containerd_version`` reads; None when the
    version is unknown."""
    v = version_tuple(containerd_version)
    if not v:
        return None
    for low, high, most in data.CONTAINERD_CONFIG_VERSIONS["ranges"]:
        if version_tuple(low) <= v and (high is None or v < version_tuple(high)):
            return most
    return None


def precompiled_tag(operator_version, branch, kernel, os_id, version_id):
    """The precompiled driver image tag operator ``operator_version`` looks for: ``<branch>-<kernel>-<os>``."""
    row = data.PRECOMPILED
    version = str(version_id)
    if os_id in row["os_major_ids"] and version_tuple(release_key(operator_version)) >= version_tuple(
        row["os_major_from"]
    ):
        version = version.split(".", 1)[0]
    return "%s-%s-%s%s" % (branch, kernel, os_id, version)


def driver_at_least(driver_version, minimum):
    """``"580.65.06" >= "580"`` is True: a bare branch minimum means any driver of that branch or later."""
    dv = version_tuple(driver_version)
    return bool(dv) and dv >= version_tuple(minimum)


def min_driver_for_cuda(cuda_version):
    """The minimum Linux driver for CUDA ``major.minor``: the GA driver where listed, else the major's floor."""
    parts = version_tuple(cuda_version)
    if not parts:
        raise CompatError("CUDA version %r is not major.minor (for example 12.8)" % (cuda_version,))
    row = data.CUDA_DRIVERS.get(str(parts[0]))
    if row is None:
        raise CompatError(
            "CUDA %s is not in the compatibility matrix; known majors: %s"
            % (cuda_version, ", ".join(sorted(data.CUDA_DRIVERS, key=int)))
        )
    minor = "%d.%d" % (parts[0], parts[1] if len(parts) > 1 else 0)
    return row["ga"].get(minor, row["minimum"])


def kernel_module(architecture):
    """``{module, required, source}`` for an architecture; unknown ones are ``any`` with no source."""
    row = data.ARCH_KERNEL_MODULE.get(str(architecture or "").lower())
    if row is None:
        return {"module": "any", "required": False, "source": None}
    return dict(row)


def auto_kernel_module_min_driver():
    return data.KERNEL_MODULE_TYPE_AUTO_MIN_DRIVER["version"]


def matrix():
    """The whole matrix as plain data (for the lookup plugin and reports)."""
    return {
        "data_version": data.DATA_VERSION,
        "releases": copy.deepcopy(data.RELEASES),
        "driver_branches": copy.deepcopy(data.DRIVER_BRANCHES),
        "cuda_drivers": copy.deepcopy(data.CUDA_DRIVERS),
        "arch_kernel_module": copy.deepcopy(data.ARCH_KERNEL_MODULE),
        "kernel_module_type_auto_min_driver": copy.deepcopy(data.KERNEL_MODULE_TYPE_AUTO_MIN_DRIVER),
        "nri_plugin": copy.deepcopy(data.NRI_PLUGIN),
    }
