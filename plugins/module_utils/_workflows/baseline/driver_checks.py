# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change incompatibly at any
# time, including in a patch release. Do not use it elsewhere.

"""Driver checks: the host driver against the policy, NVML, the kernel module flavour, CUDA and the target driver."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator import compat
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.node_judgement import judge_nvml
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline.facts import (
    DRIVER_SOURCE,
    architectures,
    driver_unknown,
    fact,
    host_driver,
    is_host_driver,
    operator_managed,
    target_driver,
    unknown_in,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline.model import (
    bad,
    check,
    na,
    ok,
    unknown,
)

_DRIVER_UNKNOWN = "whether an NVIDIA kernel module is loaded, and which"


@check("driver.preinstalled_conflict", "host", "fail", "No host driver collides with the operator's driver")
def _preinstalled_conflict(ctx, opts):
    if not operator_managed(opts):
        return na("driver policy is preinstalled")
    drv = fact(ctx, "gpu_host", "nvidia_driver", default={})
    if unknown_in(drv, "loaded"):
        return unknown(ctx, _DRIVER_UNKNOWN, DRIVER_SOURCE)
    if not drv.get("loaded"):
        return ok("no NVIDIA kernel module is loaded on the host")
    if unknown_in(fact(ctx, "gpu_host", "validations"), "present"):
        return unknown(ctx, "whether the loaded driver is the operator's", "/run/nvidia/validations")
    if not is_host_driver(ctx):
        return ok("the loaded driver %s comes from the operator's driver container" % drv.get("version"))
    return bad(
        "a host driver %s (%s) is loaded while the operator is to manage the driver"
        % (drv.get("version"), drv.get("flavor")),
        "Either set gpu_baseline_driver_policy=preinstalled and install with driver.enabled=false (or label the "
        "node nvidia.com/gpu.deploy.driver=false), or uninstall the host driver and reboot.",
    )


@check("driver.preinstalled_present", "host", "fail", "The preinstalled driver is loaded")
def _preinstalled_present(ctx, opts):
    if operator_managed(opts):
        return na("driver policy is operator-managed")
    version, flavor = host_driver(ctx)
    if version:
        return ok("host driver %s (%s) is loaded" % (version, flavor or "flavour unknown"))
    if driver_unknown(ctx):
        return unknown(ctx, _DRIVER_UNKNOWN, DRIVER_SOURCE)
    return bad(
        "driver policy is preinstalled but no NVIDIA driver is loaded (/proc/driver/nvidia/version is absent)",
        "Install and load the NVIDIA driver on the host, or set gpu_baseline_driver_policy=operator-managed.",
    )


@check("driver.host_supported", "host", "warn", "The host driver is on a branch the target release supports")
def _host_supported(ctx, opts):
    if operator_managed(opts):
        return na("driver policy is operator-managed (see driver.target_supported)")
    version, _flavor = host_driver(ctx)
    if not version and driver_unknown(ctx):
        return unknown(ctx, _DRIVER_UNKNOWN, DRIVER_SOURCE)
    if not version:
        return na("no host driver is loaded")
    operator, rel = opts["operator_version"], opts["release"]["release"]
    branches = compat.driver_branches(operator)
    branch = compat.driver_branch(version)
    row = branches.get(branch)
    nearest = compat.nearest_driver(operator, version)
    if row is None:
        return bad(
            "host driver %s is on R%s, a branch operator %s does not support (supported: %s)"
            % (version, branch, rel, ", ".join(_branch_text(b, r) for b, r in branches.items())),
            "Move the host driver to R%s, the nearest supported branch, at %s or later (for example %s)."
            % (compat.driver_branch(nearest), branches[compat.driver_branch(nearest)]["minimum"], nearest),
        )
    if not compat.driver_at_least(version, row["minimum"]):
        return bad(
            "host driver %s is below %s, the minimum of R%s for operator %s" % (version, row["minimum"], branch, rel),
            "Upgrade the host driver on R%s to %s or later (for example %s, the operator's R%s driver)."
            % (branch, row["minimum"], nearest, branch),
        )
    return ok(
        "host driver %s is on %s, supported by operator %s from %s"
        % (version, _branch_text(branch, row), rel, row["minimum"])
    )


def _branch_text(branch, row):
    """``R580 (long-term support)``; the bare ``R575`` for a branch NVIDIA's page does not designate."""
    return "R%s (%s)" % (branch, row["designation"]) if row["designation"] else "R%s" % branch


@check("driver.library_mismatch", "host", "fail", "The loaded kernel module, NVML and the user-space library agree")
def _library_mismatch(ctx, opts):
    nvml = ctx.get("nvidia_gpu") or {}
    module = fact(ctx, "gpu_host", "nvidia_driver", "version")
    if nvml.get("reason") == "driver_library_mismatch":
        return bad(
            "Driver/library version mismatch: NVML cannot initialise against the loaded kernel module %s"
            % (module or "(version unknown)"),
            _MISMATCH_FIX % "the installed driver's",
        )
    if not nvml.get("available"):
        return na("NVML is unavailable (%s): see nvml.available" % nvml.get("reason"))
    if fact(ctx, "gpu_host", "nvidia_driver", "loaded") is False:
        return na("no NVIDIA kernel module is loaded on the host: nothing to compare NVML with")
    library = _library_version(nvml.get("nvml_version"))
    versions = (
        ("the loaded kernel module (%s)" % DRIVER_SOURCE, module),
        ("NVML's driver", nvml.get("driver_version")),
        ("the user-space library (NVML %s)" % nvml.get("nvml_version"), library),
    )
    known = [(what, version) for what, version in versions if version]
    if len({version for _what, version in known}) > 1:
        return bad(
            "Driver/library version mismatch: %s" % ", ".join("%s is %s" % kv for kv in known),
            _MISMATCH_FIX % ("driver %s" % (library or nvml.get("driver_version"))),
        )
    if not module:
        return unknown(ctx, "the loaded kernel module's version, to compare with NVML's", DRIVER_SOURCE)
    return ok("%s agree on %s" % (" and ".join(what for what, _version in known), known[0][1]))


_MISMATCH_FIX = (
    "Load %s kernel module: stop the GPU workloads on the host, then reboot it (or unload and reload the modules - "
    "sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && sudo modprobe nvidia), and restart the GPU operands."
)


def _library_version(nvml_version):
    """The driver version of NVML's own version string (``12.570.124.06`` -> ``570.124.06``), or None."""
    parts = str(nvml_version or "").split(".")
    return ".".join(parts[1:]) if len(parts) >= 3 and parts[0].isdigit() and len(parts[0]) <= 2 else None


@check("nvml.available", "host", "fail", "NVML answers on a host with a preinstalled driver")
def _nvml_available(ctx, opts):
    if operator_managed(opts):
        return na("the operator's driver container provides NVML after the install")
    nvml = ctx.get("nvidia_gpu") or {}
    if nvml.get("available"):
        return ok("NVML %s sees %s GPU(s)" % (nvml.get("driver_version"), nvml.get("gpu_count")))
    if nvml.get("reason") == "driver_library_mismatch":
        return na("reported by driver.library_mismatch")
    (unavailable,) = judge_nvml(nvml)  # the node judgement's driver-layer finding, before any node exists
    return bad(unavailable["message"], unavailable["fix"])


@check("kernel_module.required", "host", "fail", "The kernel module flavour the GPUs require")
def _kernel_module_required(ctx, opts):
    return _kernel_module(ctx, opts, required=True)


@check("kernel_module.recommended", "host", "warn", "The kernel module flavour advised for the GPUs")
def _kernel_module_recommended(ctx, opts):
    return _kernel_module(ctx, opts, required=False)


def _kernel_module(ctx, opts, required):
    archs = architectures(ctx)
    if not archs:
        return na("no GPU architecture known (NVML unavailable)")
    wanted = {}
    for arch in archs:
        row = compat.kernel_module(arch)
        if row["module"] != "any" and row["required"] == required:
            wanted[arch] = row["module"]
    if not wanted:
        return ok("%s: no %s flavour" % (", ".join(archs), "required" if required else "advised"))
    if len(set(wanted.values())) > 1:
        return bad(
            "GPUs need different flavours on one host: %s" % ", ".join("%s=%s" % kv for kv in sorted(wanted.items())),
            "Do not mix pre-GSP and Blackwell-class GPUs in one host.",
        )
    need = next(iter(wanted.values()))
    if not operator_managed(opts):
        _version, flavor = host_driver(ctx)
        if flavor == need:
            return ok("host driver is %s, as %s needs" % (flavor, ", ".join(sorted(wanted))))
        if flavor is None and unknown_in(fact(ctx, "gpu_host", "nvidia_driver"), "loaded"):
            return unknown(ctx, "the host driver's kernel module flavour", DRIVER_SOURCE)
        return bad(
            "%s GPUs %s the %s kernel modules; the host driver is %s"
            % (", ".join(sorted(wanted)), "need" if required else "are advised to use", need, flavor or "unknown"),
            "Install the %s flavour of the host driver (for example nvidia-driver-<branch>-%s)."
            % (need, "open" if need == "open" else "server"),
        )
    kmt = opts["kernel_module_type"]
    if kmt == need:
        return ok("driver.kernelModuleType=%s" % kmt)
    if not opts["release"]["kernel_module_type_option"]:
        if need == "proprietary":
            return ok("operator %s installs the proprietary modules" % opts["release"]["release"])
        return bad(
            "operator %s has no driver.kernelModuleType and installs the proprietary modules; %s need open"
            % (opts["release"]["release"], ", ".join(sorted(wanted))),
            "Use operator 25.3 or later with driver.kernelModuleType=auto or open.",
        )
    if kmt == "auto":
        minimum = compat.auto_kernel_module_min_driver()
        driver = target_driver(opts)
        if compat.driver_at_least(driver, minimum):
            return ok("driver.kernelModuleType=auto with driver %s picks %s" % (driver, need))
        return bad(
            "driver.kernelModuleType=auto needs driver >= %s to pick the flavour; target driver is %s"
            % (minimum, driver),
            "Set driver.kernelModuleType=%s (gpu_baseline_kernel_module_type) or a driver >= %s." % (need, minimum),
        )
    return bad(
        "%s GPUs %s the %s kernel modules; driver.kernelModuleType=%s"
        % (", ".join(sorted(wanted)), "need" if required else "are advised to use", need, kmt),
        "Set driver.kernelModuleType=%s or auto (gpu_baseline_kernel_module_type)." % need,
    )


@check("cuda.driver_minimum", "host", "fail", "The driver runs the CUDA version the workloads need")
def _cuda(ctx, opts):
    if not opts["cuda_version"]:
        return na("gpu_baseline_cuda_version is not set")
    minimum = compat.min_driver_for_cuda(opts["cuda_version"])
    driver = target_driver(opts) if operator_managed(opts) else host_driver(ctx)[0]
    if not driver and driver_unknown(ctx):
        return unknown(ctx, _DRIVER_UNKNOWN, DRIVER_SOURCE)
    if not driver:
        return na("no host driver is loaded")
    if compat.driver_at_least(driver, minimum):
        return ok("driver %s >= %s for CUDA %s" % (driver, minimum, opts["cuda_version"]))
    return bad(
        "driver %s is older than %s, the minimum for CUDA %s" % (driver, minimum, opts["cuda_version"]),
        "Use a driver >= %s, or the cuda-compat forward-compatibility package on data-center GPUs." % minimum,
    )


@check("driver.target_supported", "cluster", "fail", "The driver the operator will install is listed for it")
def _target_supported(cluster, hosts, opts):
    if not operator_managed(opts):
        return na("driver policy is preinstalled (see driver.host_supported)")
    return _driver_listed(
        opts, "driver", target_driver(opts), "Set gpu_baseline_driver_version (driver.version) to a listed driver"
    )


def _driver_listed(opts, what, version, fix):
    """ok when the operator release lists driver ``version``; else bad with the listed ones and ``fix`` naming the
    nearest listed driver (on the same branch before another)."""
    operator = opts["operator_version"]
    if compat.driver_supported(operator, version):
        return ok("%s %s is listed for operator %s" % (what, version, opts["release"]["release"]))
    return bad(
        "%s %s is not listed for operator %s (listed: %s)"
        % (what, version, opts["release"]["release"], ", ".join(compat.supported_drivers(operator))),
        "%s, for example %s." % (fix, compat.nearest_driver(operator, version)),
    )
