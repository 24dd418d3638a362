# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change incompatibly at any
# time, including in a patch release. Do not use it elsewhere.

"""Baseline checks: named pre-flight checks over host facts and the cluster's state, with a fleet summary.

Every check has an ``id``, a default ``severity`` (``fail``, ``warn`` or ``info``), a ``title`` and a function
that returns a :class:`Outcome`: ``pass``, ``fail`` (a finding, with evidence and a concrete fix) or
``not_applicable`` (with the reason). Host checks see one host's ``gpu_host`` and ``nvidia_gpu`` facts and the
options; cluster checks see ``gpu_preflight_info``'s result, every host and the options. Users skip checks by
id, change a check's severity, or add their own (already evaluated by the role, per host): :func:`options`
validates all three and names unknown ids.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.errors import GpuOpsError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator import compat as compat

SEVERITIES = ("fail", "warn", "info")
POLICIES = ("operator-managed", "preinstalled")
FAIL_ON = ("fail", "warn", "never")
PASS, FAIL, NA, SKIPPED = "pass", "fail", "not_applicable", "skipped"

#: Containerd paths the GPU Operator's toolkit must be told about on non-kubeadm distributions
#: (gpu-operator.md s3; gpu_host_facts reports the host's own paths).
_RUNTIME_ENV = ("CONTAINERD_CONFIG", "CONTAINERD_SOCKET")

#: Labels the operator keys on to find GPU nodes (gpu-operator.md s5).
NFD_GPU_LABEL = "feature.node.kubernetes.io/pci-10de.present"


class BaselineError(GpuOpsError, ValueError):
    """Bad options (unknown check id, bad severity...): the message names the input and the fix."""


class Outcome(object):
    """A check's answer; ``subjects`` are the inventory hosts or node names a cluster finding is about."""

    __slots__ = ("status", "evidence", "fix", "subjects")

    def __init__(self, status, evidence, fix=None, subjects=None):
        self.status, self.evidence, self.fix, self.subjects = status, evidence, fix, list(subjects or [])


def ok(evidence):
    return Outcome(PASS, evidence)


def bad(evidence, fix, subjects=None):
    return Outcome(FAIL, evidence, fix, subjects)


def na(reason):
    return Outcome(NA, reason)


class Check(object):
    def __init__(self, check_id, scope, severity, title, fn):
        self.id, self.scope, self.severity, self.title, self.fn = check_id, scope, severity, title, fn


REGISTRY = {}


def check(check_id, scope, severity, title):
    def register(fn):
        REGISTRY[check_id] = Check(check_id, scope, severity, title, fn)
        return fn

    return register


def _g(d, *keys, **kw):
    for k in keys:
        if not isinstance(d, dict):
            return kw.get("default")
        d = d.get(k)
    return kw.get("default") if d is None else d


# -- options -------------------------------------------------------------------------------------------------


def options(raw):
    """Validated options with defaults; raises BaselineError naming every bad id or value."""
    raw = dict(raw or {})
    opts = {
        "operator_version": raw.get("operator_version") or "v26.7.0",
        "driver_policy": raw.get("driver_policy") or "operator-managed",
        "driver_version": raw.get("driver_version") or None,
        "kernel_module_type": raw.get("kernel_module_type") or "auto",
        "use_precompiled": bool(raw.get("use_precompiled")),
        "cuda_version": raw.get("cuda_version") or None,
        "toolkit_env": dict(raw.get("toolkit_env") or {}),
        "nfd_enabled": raw.get("nfd_enabled", True) is not False,
        "dcgm_exporter_enabled": raw.get("dcgm_exporter_enabled", True) is not False,
        "service_monitor_enabled": raw.get("service_monitor_enabled"),
        "runtime_class": raw.get("runtime_class") or "nvidia",
        "operator_namespace": raw.get("operator_namespace") or "gpu-operator",
        "skip": list(raw.get("skip") or []),
        "severity": dict(raw.get("severity") or {}),
        "user_checks": list(raw.get("user_checks") or []),
    }
    try:
        opts["release"] = compat.release(opts["operator_version"])
    except compat.CompatError as exc:
        raise BaselineError("gpu_baseline_operator_version: %s" % exc) from None
    if opts["driver_policy"] not in POLICIES:
        raise BaselineError(
            "gpu_baseline_driver_policy is %r; use one of %s" % (opts["driver_policy"], ", ".join(POLICIES))
        )
    if opts["kernel_module_type"] not in ("auto", "open", "proprietary"):
        raise BaselineError(
            "gpu_baseline_kernel_module_type is %r; use auto, open or proprietary" % opts["kernel_module_type"]
        )
    if opts["cuda_version"]:
        try:
            compat.min_driver_for_cuda(opts["cuda_version"])
        except compat.CompatError as exc:
            raise BaselineError("gpu_baseline_cuda_version: %s" % exc) from None
    if opts["service_monitor_enabled"] is None:
        opts["service_monitor_enabled"] = opts["release"]["service_monitor_default"]
    user_ids = []
    for i, uc in enumerate(opts["user_checks"]):
        if not isinstance(uc, dict) or not uc.get("id"):
            raise BaselineError("gpu_baseline_user_checks[%d] has no id; every user check needs id, failed and fix" % i)
        if uc["id"] in REGISTRY or uc["id"] in user_ids:
            raise BaselineError("gpu_baseline_user_checks[%d]: id %r is already taken; pick another" % (i, uc["id"]))
        if uc.get("severity", "fail") not in SEVERITIES:
            raise BaselineError(
                "gpu_baseline_user_checks[%d] (%s): severity %r; use fail, warn or info" % (i, uc["id"], uc["severity"])
            )
        user_ids.append(uc["id"])
    known = set(REGISTRY) | set(user_ids)
    unknown = sorted(set(opts["skip"]) - known)
    if unknown:
        raise BaselineError(
            "gpu_baseline_skip names unknown check id(s): %s; known ids are listed in docs/baseline.md"
            % ", ".join(unknown)
        )
    unknown = sorted(set(opts["severity"]) - known)
    if unknown:
        raise BaselineError("gpu_baseline_severity names unknown check id(s): %s" % ", ".join(unknown))
    bad_values = sorted("%s=%s" % (k, v) for k, v in opts["severity"].items() if v not in SEVERITIES)
    if bad_values:
        raise BaselineError("gpu_baseline_severity: %s; a severity is fail, warn or info" % ", ".join(bad_values))
    return opts


def with_user_checks(raw, user_checks):
    """``raw`` with ``user_checks`` given apart: the role passes them apart so that Ansible templates a check's
    ``failed`` only when a check reads it (on the host, after the facts are gathered), never when the options
    are stored."""
    if user_checks is None:
        return raw
    out = dict(raw or {})
    out["user_checks"] = user_checks
    return out


def target_driver(opts):
    return opts["driver_version"] or compat.default_driver(opts["operator_version"])


def _operator_managed(opts):
    return opts["driver_policy"] == "operator-managed"


def _host_driver(ctx):
    """(version, flavor) of the driver loaded on the host, from /proc/driver/nvidia/version, else NVML."""
    drv = _g(ctx, "gpu_host", "nvidia_driver", default={})
    if drv.get("loaded"):
        return drv.get("version"), drv.get("flavor")
    if _g(ctx, "nvidia_gpu", "available"):
        return _g(ctx, "nvidia_gpu", "driver_version"), None
    return None, None


def _is_host_driver(ctx):
    """True when the loaded driver is the host's own, not the operator's driver container."""
    ready = _g(ctx, "gpu_host", "validations", "driver_ready", default={}) or {}
    return str(ready.get("IS_HOST_DRIVER", "true")).lower() != "false"


def _architectures(ctx):
    gpus = _g(ctx, "nvidia_gpu", "gpus", default=[]) or []
    return sorted({g.get("architecture") for g in gpus if g.get("architecture")})


# -- host checks ---------------------------------------------------------------------------------------------


@check("kernel.headers", "host", "fail", "Kernel headers for the running kernel (driver container build)")
def _kernel_headers(ctx, opts):
    if not _operator_managed(opts):
        return na("the host's own driver is used; the operator builds no module")
    if opts["use_precompiled"]:
        return na("precompiled driver images need no headers")
    k = _g(ctx, "gpu_host", "kernel", default={})
    if k.get("headers_present"):
        return ok("headers for %s are present" % k.get("release"))
    return bad(
        "no headers for kernel %s (lib/modules/<rel>/build, usr/src/linux-headers-<rel>, usr/src/kernels/<rel>)"
        % k.get("release"),
        "Install linux-headers-%s (or kernel-devel-%s) and make the package repositories reachable from the "
        "driver pod, or use precompiled drivers (driver.usePrecompiled=true) with a pinned kernel."
        % (k.get("release"), k.get("release")),
    )


@check("nouveau.loaded", "host", "fail", "nouveau is not loaded")
def _nouveau_loaded(ctx, opts):
    n = _g(ctx, "gpu_host", "nouveau", default={})
    if not n.get("loaded"):
        return ok("nouveau is not loaded")
    return bad(
        "the nouveau module is loaded (/sys/module/nouveau)",
        "Blacklist nouveau (blacklist nouveau and options nouveau modeset=0 in /etc/modprobe.d/), "
        "rebuild the initramfs (update-initramfs -u or dracut -f) and reboot.",
    )


@check("nouveau.blacklisted", "host", "warn", "nouveau is blacklisted for the next boot")
def _nouveau_blacklisted(ctx, opts):
    n = _g(ctx, "gpu_host", "nouveau", default={})
    if n.get("blacklisted_modprobe") or n.get("blacklisted_cmdline"):
        return ok("nouveau is blacklisted (%s)" % (", ".join(n.get("blacklist_files") or []) or "kernel cmdline"))
    return bad(
        "nouveau is not blacklisted in modprobe.d or on the kernel command line",
        "Add /etc/modprobe.d/blacklist-nouveau.conf with 'blacklist nouveau' and 'options nouveau modeset=0', "
        "then rebuild the initramfs.",
    )


@check("secure_boot.driver", "host", "fail", "Secure Boot accepts the driver's kernel modules")
def _secure_boot(ctx, opts):
    sb = _g(ctx, "gpu_host", "secure_boot", default={})
    if not sb.get("enabled"):
        return ok("Secure Boot is off" if sb.get("efi") else "not an EFI boot; no Secure Boot")
    if _operator_managed(opts) and not opts["use_precompiled"]:
        return bad(
            "Secure Boot is on and the operator would build and load an unsigned driver module",
            "Use a host-installed signed driver (gpu_baseline_driver_policy=preinstalled, driver.enabled=false) "
            "or signed precompiled driver images (driver.usePrecompiled=true), or disable Secure Boot.",
        )
    version, _flavor = _host_driver(ctx)
    if not _operator_managed(opts) and not version:
        return bad(
            "Secure Boot is on and no NVIDIA driver is loaded on the host",
            "Install a driver signed with a key enrolled in the MOK list (mokutil --import) and load it.",
        )
    return ok("Secure Boot is on; the loaded or precompiled driver is signed")


@check("driver.preinstalled_conflict", "host", "fail", "No host driver collides with the operator's driver")
def _preinstalled_conflict(ctx, opts):
    if not _operator_managed(opts):
        return na("driver policy is preinstalled")
    drv = _g(ctx, "gpu_host", "nvidia_driver", default={})
    if not drv.get("loaded"):
        return ok("no NVIDIA kernel module is loaded on the host")
    if not _is_host_driver(ctx):
        return ok("the loaded driver %s comes from the operator's driver container" % drv.get("version"))
    return bad(
        "a host driver %s (%s) is loaded while the operator is to manage the driver"
        % (drv.get("version"), drv.get("flavor")),
        "Either set gpu_baseline_driver_policy=preinstalled and install with driver.enabled=false (or label the "
        "node nvidia.com/gpu.deploy.driver=false), or uninstall the host driver and reboot.",
    )


@check("driver.preinstalled_present", "host", "fail", "The preinstalled driver is loaded")
def _preinstalled_present(ctx, opts):
    if _operator_managed(opts):
        return na("driver policy is operator-managed")
    version, flavor = _host_driver(ctx)
    if version:
        return ok("host driver %s (%s) is loaded" % (version, flavor or "flavour unknown"))
    return bad(
        "driver policy is preinstalled but no NVIDIA driver is loaded (/proc/driver/nvidia/version is absent)",
        "Install and load the NVIDIA driver on the host, or set gpu_baseline_driver_policy=operator-managed.",
    )


@check("driver.host_supported", "host", "warn", "The host driver is one the target release lists")
def _host_supported(ctx, opts):
    if _operator_managed(opts):
        return na("driver policy is operator-managed (see driver.target_supported)")
    version, _flavor = _host_driver(ctx)
    if not version:
        return na("no host driver is loaded")
    return _driver_listed(opts, "host driver", version, "Upgrade the host driver to a listed version")


@check("driver.library_mismatch", "host", "fail", "The driver's user-space library matches its kernel module")
def _library_mismatch(ctx, opts):
    nvml = ctx.get("nvidia_gpu") or {}
    if nvml.get("reason") == "driver_library_mismatch":
        return bad(
            "NVML reports a driver/library version mismatch (kernel module %s)"
            % (_g(ctx, "gpu_host", "nvidia_driver", "version") or "unknown"),
            "Reload the NVIDIA kernel modules or reboot the host, then restart the GPU operands.",
        )
    return ok("NVML %s" % ("is available" if nvml.get("available") else "reports %s" % nvml.get("reason")))


@check("nvml.available", "host", "fail", "NVML answers on a host with a preinstalled driver")
def _nvml_available(ctx, opts):
    if _operator_managed(opts):
        return na("the operator's driver container provides NVML after the install")
    nvml = ctx.get("nvidia_gpu") or {}
    if nvml.get("available"):
        return ok("NVML %s sees %s GPU(s)" % (nvml.get("driver_version"), nvml.get("gpu_count")))
    if nvml.get("reason") == "driver_library_mismatch":
        return na("reported by driver.library_mismatch")
    return bad(
        "NVML is unavailable: %s" % nvml.get("reason"),
        nvml.get("hint") or "Check that the NVIDIA driver is installed and loaded on the host.",
    )


@check("os.supported", "host", "fail", "The OS is in the target release's support matrix")
def _os_supported(ctx, opts):
    os_ = _g(ctx, "gpu_host", "os", default={})
    if not os_.get("id"):
        return bad("the OS could not be read (/etc/os-release)", "Check /etc/os-release on the host.")
    if compat.os_supported(opts["operator_version"], os_.get("id"), os_.get("version_id")):
        return ok("%s %s is supported by operator %s" % (os_["id"], os_.get("version_id"), opts["release"]["release"]))
    listed = "; ".join("%s %s" % (k, ", ".join(v)) for k, v in sorted(opts["release"]["os"].items()))
    return bad(
        "%s %s is not supported by operator %s (supported: %s)"
        % (os_["id"], os_.get("version_id"), opts["release"]["release"], listed),
        "Move the host to a supported OS, or pick an operator release that supports %s %s; "
        "without it there is no driver image nvcr.io/nvidia/driver:<version>-%s%s."
        % (os_["id"], os_.get("version_id"), os_["id"], os_.get("version_id")),
    )


@check("runtime.containerd_paths", "host", "fail", "The toolkit is told the distribution's containerd paths")
def _containerd_paths(ctx, opts):
    rt = _g(ctx, "gpu_host", "container_runtime", default={})
    distro = _g(ctx, "gpu_host", "kubernetes", "distribution")
    if rt.get("name") != "containerd":
        return na("container runtime is %s" % (rt.get("name") or "not detected"))
    if not rt.get("socket_present"):
        return bad(
            "containerd socket %s is missing (config %s)" % (rt.get("socket"), rt.get("config_path")),
            "Start containerd, or point CONTAINERD_SOCKET in gpu_baseline_toolkit_env at the socket in use.",
        )
    if distro in (None, "kubeadm"):
        return ok("stock containerd paths %s, %s" % (rt.get("config_path"), rt.get("socket")))
    want = {
        "CONTAINERD_CONFIG": rt.get("template_path") or rt.get("config_path"),
        "CONTAINERD_SOCKET": rt.get("socket"),
    }
    env = opts["toolkit_env"]
    wrong = ["%s=%s (set: %s)" % (k, want[k], env.get(k)) for k in _RUNTIME_ENV if env.get(k) != want[k]]
    if not wrong:
        return ok("%s containerd paths are set in toolkit.env" % distro)
    return bad(
        "%s uses non-default containerd paths; toolkit.env needs %s" % (distro, "; ".join(wrong)),
        "Set toolkit.env (gpu_baseline_toolkit_env) to %s." % ", ".join("%s=%s" % (k, want[k]) for k in _RUNTIME_ENV),
    )


@check("kernel_module.required", "host", "fail", "The kernel module flavour the GPUs require")
def _kernel_module_required(ctx, opts):
    return _kernel_module(ctx, opts, required=True)


@check("kernel_module.recommended", "host", "warn", "The kernel module flavour advised for the GPUs")
def _kernel_module_recommended(ctx, opts):
    return _kernel_module(ctx, opts, required=False)


def _kernel_module(ctx, opts, required):
    archs = _architectures(ctx)
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
    if not _operator_managed(opts):
        _version, flavor = _host_driver(ctx)
        if flavor == need:
            return ok("host driver is %s, as %s needs" % (flavor, ", ".join(sorted(wanted))))
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


@check("fabric_manager.nvswitch", "host", "fail", "NVSwitch systems run Fabric Manager")
def _fabric_manager(ctx, opts):
    fm = _g(ctx, "gpu_host", "fabric_manager", default={})
    switches = _g(ctx, "gpu_host", "pci", "nvswitch_count", default=0)
    if not switches:
        return na("no NVSwitch on the PCI bus")
    stuck = sorted(
        "GPU %s %s" % (g.get("index"), _g(g, "fabric", "state"))
        for g in _g(ctx, "nvidia_gpu", "gpus", default=[]) or []
        if _g(g, "fabric", "state") in ("not_started", "in_progress")
    )
    if stuck:
        return bad(
            "%d NVSwitch(es); fabric registration not complete: %s" % (switches, ", ".join(stuck)),
            "Start nvidia-fabricmanager (same version as the driver) and check its log.",
        )
    if _operator_managed(opts):
        return ok("%d NVSwitch(es); the operator's driver container starts Fabric Manager" % switches)
    if fm.get("installed") and fm.get("enabled"):
        return ok("%d NVSwitch(es); nvidia-fabricmanager is installed and enabled" % switches)
    return bad(
        "%d NVSwitch(es) but nvidia-fabricmanager is %s"
        % (switches, "not enabled" if fm.get("installed") else "not installed"),
        "Install nvidia-fabricmanager-<driver branch> matching the host driver and systemctl enable --now "
        "nvidia-fabricmanager.",
    )


@check("unattended_upgrades.kernel", "host", "warn", "Automatic updates do not replace the kernel")
def _unattended(ctx, opts):
    uu = _g(ctx, "gpu_host", "unattended_upgrades", default={})
    if not uu.get("enabled"):
        return ok("automatic updates are %s" % ("off" if uu.get("tool") else "not configured"))
    if uu.get("kernel_blacklisted"):
        return ok("%s is on with kernel packages blacklisted" % uu.get("tool"))
    return bad(
        "%s is enabled and may install a new kernel the driver was not built for" % uu.get("tool"),
        'Blacklist kernel packages (Unattended-Upgrade::Package-Blacklist { "linux-"; }) or disable automatic '
        "kernel updates.",
    )


@check("devices.char_links", "host", "warn", "/dev/char links exist for every /dev/nvidia* node")
def _char_links(ctx, opts):
    missing = _g(ctx, "gpu_host", "devices", "char_links_missing", default=[]) or []
    if not _g(ctx, "gpu_host", "devices", "nodes", default=[]):
        return na("no /dev/nvidia* device nodes yet")
    if not missing:
        return ok("every /dev/nvidia* node has a /dev/char link")
    return bad(
        "no /dev/char link for %s" % ", ".join(missing),
        "Let the validator create them (never set DISABLE_DEV_CHAR_SYMLINK_CREATION=true) or run "
        "nvidia-ctk system create-dev-char-symlinks --create-all.",
    )


@check("gpu.health", "host", "fail", "No GPU is in critical health")
def _gpu_health(ctx, opts):
    nvml = ctx.get("nvidia_gpu") or {}
    if not nvml.get("available"):
        return na("NVML unavailable")
    if nvml.get("health") != "critical":
        return ok("GPU health %s" % nvml.get("health"))
    reasons = sorted(
        "GPU %s: %s" % (g.get("index"), ", ".join(_g(g, "health", "reasons", default=[])))
        for g in nvml.get("gpus") or []
        if _g(g, "health", "status") == "critical"
    )
    return bad("critical GPU health: %s" % "; ".join(reasons), "Drain the node and reset or replace the GPUs named.")


@check("cuda.driver_minimum", "host", "fail", "The driver runs the CUDA version the workloads need")
def _cuda(ctx, opts):
    if not opts["cuda_version"]:
        return na("gpu_baseline_cuda_version is not set")
    minimum = compat.min_driver_for_cuda(opts["cuda_version"])
    driver = target_driver(opts) if _operator_managed(opts) else _host_driver(ctx)[0]
    if not driver:
        return na("no host driver is loaded")
    if compat.driver_at_least(driver, minimum):
        return ok("driver %s >= %s for CUDA %s" % (driver, minimum, opts["cuda_version"]))
    return bad(
        "driver %s is older than %s, the minimum for CUDA %s" % (driver, minimum, opts["cuda_version"]),
        "Use a driver >= %s, or the cuda-compat forward-compatibility package on data-center GPUs." % minimum,
    )


@check("host_facts.problems", "host", "warn", "Every host fact source was readable")
def _problems(ctx, opts):
    problems = _g(ctx, "gpu_host", "problems", default=[]) or []
    if not problems:
        return ok("no unreadable or malformed host files")
    return bad(
        "; ".join("%s %s" % (p.get("source"), p.get("reason")) for p in problems),
        "Fix or remove the files named; checks that read them may be wrong until then.",
    )


# -- cluster checks ------------------------------------------------------------------------------------------


def _mapped_nodes(cluster, hosts):
    nodes = cluster.get("nodes") or {}
    return {h: nodes.get(v.get("node_name") or h) for h, v in hosts.items()}


@check("hosts.gathered", "cluster", "fail", "Every inventory GPU host ran the host part")
def _hosts_gathered(cluster, hosts, opts):
    missing = sorted(h for h, v in hosts.items() if not v.get("gpu_host") and not v.get("baseline"))
    if not missing:
        return ok("%d host(s) have host facts" % len(hosts))
    return bad(
        "no host facts for: %s (unreachable, or the host part did not run)" % ", ".join(missing),
        "Run the role's host part (gpuops.gpu_operator.gpu_baseline) on these hosts before the cluster part.",
        subjects=missing,
    )


@check("k8s.version", "cluster", "fail", "The Kubernetes version is in the target release's range")
def _k8s_version(cluster, hosts, opts):
    v = _g(cluster, "kubernetes_version", "git_version")
    rng = opts["release"]["kubernetes"]
    if not v:
        return na("the Kubernetes version was not read")
    if compat.in_range(v, rng):
        return ok("Kubernetes %s is in %s-%s for operator %s" % (v, rng[0], rng[1], opts["release"]["release"]))
    return bad(
        "Kubernetes %s is outside %s-%s, the range of operator %s" % (v, rng[0], rng[1], opts["release"]["release"]),
        "Pick an operator release whose range includes %s, or upgrade Kubernetes into %s-%s." % (v, rng[0], rng[1]),
    )


@check("driver.target_supported", "cluster", "fail", "The driver the operator will install is listed for it")
def _target_supported(cluster, hosts, opts):
    if not _operator_managed(opts):
        return na("driver policy is preinstalled (see driver.host_supported)")
    return _driver_listed(
        opts, "driver", target_driver(opts), "Set gpu_baseline_driver_version (driver.version) to a listed driver"
    )


def _driver_listed(opts, what, version, fix):
    """ok when the operator release lists driver ``version``; else bad with the listed ones and ``fix``."""
    operator = opts["operator_version"]
    if compat.driver_supported(operator, version):
        return ok("%s %s is listed for operator %s" % (what, version, opts["release"]["release"]))
    return bad(
        "%s %s is not listed for operator %s (listed: %s)"
        % (what, version, opts["release"]["release"], ", ".join(compat.supported_drivers(operator))),
        "%s, for example %s." % (fix, compat.default_driver(operator)),
    )


@check("nodes.mapped", "cluster", "fail", "Every inventory GPU host maps to a Kubernetes node")
def _nodes_mapped(cluster, hosts, opts):
    mapped = _mapped_nodes(cluster, hosts)
    unmapped = sorted(h for h, n in mapped.items() if n is None)
    if not unmapped:
        return ok("%d host(s) map to nodes" % len(mapped))
    return bad(
        "no Kubernetes node for: %s"
        % ", ".join("%s (node %s)" % (h, hosts[h].get("node_name") or h) for h in unmapped),
        "Set the node name variable (gpu_baseline_node_name_var, default k8s_node_name) for these hosts, or join "
        "them to the cluster.",
        subjects=unmapped,
    )


@check("nfd.existing", "cluster", "warn", "No second NFD is deployed next to the chart's")
def _nfd(cluster, hosts, opts):
    nfd = cluster.get("nfd") or {}
    foreign = [
        "%s/%s" % (d["namespace"], d["name"])
        for d in nfd.get("daemonsets") or []
        if d.get("namespace") != opts["operator_namespace"]
    ]
    if not foreign:
        return ok("no NFD outside %s" % opts["operator_namespace"])
    if not opts["nfd_enabled"]:
        return ok("NFD runs (%s) and the chart's is disabled (nfd.enabled=false)" % ", ".join(foreign))
    return bad(
        "NFD already runs (%s) and nfd.enabled is true: two NFDs fight over the node labels" % ", ".join(foreign),
        "Install with nfd.enabled=false (gpu_baseline_nfd_enabled: false).",
    )


@check("servicemonitor.crd", "cluster", "fail", "The ServiceMonitor CRD exists when the ServiceMonitor is on")
def _sm_crd(cluster, hosts, opts):
    if not opts["service_monitor_enabled"] or not opts["dcgm_exporter_enabled"]:
        return na("dcgmExporter.serviceMonitor.enabled is false")
    if opts["release"]["service_monitor_without_crd"] != "cluster_policy_not_ready":
        return na("operator %s skips a missing CRD (see servicemonitor.scrape)" % opts["release"]["release"])
    if _g(cluster, "crds", "servicemonitors.monitoring.coreos.com"):
        return ok("servicemonitors.monitoring.coreos.com exists")
    return bad(
        "serviceMonitor is enabled but servicemonitors.monitoring.coreos.com is missing: operator %s leaves the "
        "ClusterPolicy notReady" % opts["release"]["release"],
        "Install the Prometheus Operator CRDs first, or set dcgmExporter.serviceMonitor.enabled=false.",
    )


@check("servicemonitor.scrape", "cluster", "warn", "DCGM metrics reach Prometheus through the ServiceMonitor")
def _sm_scrape(cluster, hosts, opts):
    if not opts["service_monitor_enabled"] or not opts["dcgm_exporter_enabled"]:
        return na("dcgmExporter.serviceMonitor.enabled is false")
    if opts["release"]["service_monitor_without_crd"] == "cluster_policy_not_ready":
        return na("see servicemonitor.crd")
    if _g(cluster, "crds", "servicemonitors.monitoring.coreos.com"):
        return ok("servicemonitors.monitoring.coreos.com exists")
    return bad(
        "serviceMonitor is enabled but the ServiceMonitor CRD is missing: operator %s skips it and no "
        "Prometheus Operator scrapes DCGM" % opts["release"]["release"],
        "Install the Prometheus Operator, or set dcgmExporter.serviceMonitor.enabled=false and scrape "
        "nvidia-dcgm-exporter:9400/metrics another way.",
    )


@check("runtimeclass.nvidia", "cluster", "fail", "The operator's RuntimeClass is absent or points at its handler")
def _runtime_class(cluster, hosts, opts):
    rc = cluster.get("runtime_class") or {}
    name = opts["runtime_class"]
    if rc.get("exists"):
        if rc.get("handler") == name:
            return ok("RuntimeClass %s has handler %s" % (name, rc.get("handler")))
        return bad(
            "RuntimeClass %s exists with handler %s; the toolkit configures handler %s"
            % (name, rc.get("handler"), name),
            "Delete the RuntimeClass %s so the operator recreates it, or set operator.runtimeClass to another name."
            % name,
        )
    if _g(cluster, "cluster_policy", "exists"):
        return bad(
            "the ClusterPolicy exists but RuntimeClass %s does not" % name,
            "Check the operator's log; it creates RuntimeClass %s when it reconciles the ClusterPolicy." % name,
        )
    return ok("RuntimeClass %s is absent; the operator creates it at install" % name)


@check("nodes.cordoned", "cluster", "warn", "No GPU node is already cordoned")
def _cordoned(cluster, hosts, opts):
    names = sorted(n["name"] for n in (cluster.get("nodes") or {}).values() if n.get("gpu") and n.get("unschedulable"))
    if not names:
        return ok("no GPU node is cordoned")
    return bad(
        "cordoned GPU node(s): %s; they count against driver.upgradePolicy.maxUnavailable" % ", ".join(names),
        "Uncordon them (kubectl uncordon <node>) or account for them in maxUnavailable before upgrading.",
        subjects=names,
    )


@check("nodes.upgrade_failed", "cluster", "fail", "No GPU node is in upgrade-failed")
def _upgrade_failed(cluster, hosts, opts):
    names = sorted(
        n["name"] for n in (cluster.get("nodes") or {}).values() if n.get("upgrade_state") == "upgrade-failed"
    )
    if not names:
        return ok("no node is upgrade-failed")
    return bad(
        "node(s) in upgrade-failed: %s" % ", ".join(names),
        "Fix the cause (driver pod logs), then kubectl label node <node> "
        "nvidia.com/gpu-driver-upgrade-state=upgrade-required --overwrite.",
        subjects=names,
    )


@check("namespace.podsecurity", "cluster", "fail", "PodSecurity admits the privileged operands")
def _podsecurity(cluster, hosts, opts):
    ns = cluster.get("namespace") or {}
    name = opts["operator_namespace"]
    if not ns.get("exists"):
        return ok("namespace %s does not exist yet; label it when it is created" % name)
    enforce = (ns.get("labels") or {}).get("pod-security.kubernetes.io/enforce")
    if enforce in (None, "privileged"):
        return ok("namespace %s enforce=%s" % (name, enforce or "unset (cluster default)"))
    return bad(
        "namespace %s enforces PodSecurity %s; the operand DaemonSets are privileged" % (name, enforce),
        "kubectl label namespace %s pod-security.kubernetes.io/enforce=privileged --overwrite (or psa.enabled=true)."
        % name,
    )


@check("rbac.permissions", "cluster", "fail", "The identities may do what the chart and the roles need")
def _rbac(cluster, hosts, opts):
    access = cluster.get("access") or []
    if not access:
        return na("no permission was checked")
    missing = ["%s: %s" % (a.get("identity"), perm_text(m)) for a in access for m in a.get("missing") or []]
    checked = sum(a.get("checked", 0) for a in access)
    if not missing:
        return ok("%d permission(s) allowed" % checked)
    return bad(
        "%d of %d permission(s) denied: %s" % (len(missing), checked, "; ".join(missing)),
        "Grant the permissions listed (docs/rbac.yml for the automation identity; the chart needs cluster-admin-"
        "like rights to install CRDs and RBAC) or run with an identity that has them.",
    )


def perm_text(p):
    res = p.get("resource", "")
    if p.get("subresource"):
        res += "/" + p["subresource"]
    if p.get("group"):
        res += "." + p["group"]
    where = " in namespace %s" % p["namespace"] if p.get("namespace") else ""
    return "%s %s%s" % (p.get("verb"), res, where)


@check("nodes.gpu_separation", "cluster", "fail", "GPU nodes carry the declared labels and taints; CPU nodes do not")
def _separation(cluster, hosts, opts):
    nodes = cluster.get("nodes") or {}
    mapped = _mapped_nodes(cluster, hosts)
    wrong, subjects = [], []
    declared_any = set()
    for h, node in sorted(mapped.items()):
        if node is None:
            continue
        labels = hosts[h].get("gpu_node_labels") or {}
        taints = hosts[h].get("gpu_node_taints") or []
        declared_any.update("label %s=%s" % kv for kv in labels.items())
        declared_any.update(_taint_text(t) for t in taints)
        have = node.get("all_labels") or {}
        miss = ["label %s=%s" % (k, v) for k, v in sorted(labels.items()) if str(have.get(k)) != str(v)]
        miss += [_taint_text(t) for t in taints if not _has_taint(node, t)]
        if miss:
            wrong.append("GPU node %s lacks %s" % (node["name"], ", ".join(miss)))
            subjects.append(h)
    if not declared_any:
        return na("the inventory declares no GPU node labels or taints")
    gpu_names = {n["name"] for n in mapped.values() if n}
    for node in sorted(nodes.values(), key=lambda n: n["name"]):
        if node["name"] in gpu_names or node.get("gpu"):
            continue
        have = node.get("all_labels") or {}
        carried = [d for d in sorted(declared_any) if _carries(node, have, d)]
        if carried:
            wrong.append("CPU node %s carries %s" % (node["name"], ", ".join(carried)))
            subjects.append(node["name"])
    if not wrong:
        return ok("%d GPU node(s) set apart by %s" % (len(gpu_names), ", ".join(sorted(declared_any))))
    return bad(
        "; ".join(wrong),
        "Label/taint the GPU nodes as the inventory declares (kubectl label/taint node ...) and remove those "
        "labels/taints from CPU nodes.",
        subjects=subjects,
    )


def _taint_text(t):
    return "taint %s%s:%s" % (t.get("key"), "=%s" % t["value"] if t.get("value") else "", t.get("effect"))


def _has_taint(node, t):
    return any(
        x.get("key") == t.get("key")
        and x.get("effect") == t.get("effect")
        and (not t.get("value") or x.get("value") == t.get("value"))
        for x in node.get("taints") or []
    )


def _carries(node, labels, declared):
    if declared.startswith("label "):
        k, _sep, v = declared[len("label ") :].partition("=")
        return str(labels.get(k)) == v
    return any(_taint_text(t) == declared for t in node.get("taints") or [])


@check("dcgm_exporter.enabled", "cluster", "warn", "The DCGM exporter is enabled")
def _dcgm(cluster, hosts, opts):
    cp = cluster.get("cluster_policy") or {}
    enabled = cp.get("dcgm_exporter_enabled") if cp.get("exists") else opts["dcgm_exporter_enabled"]
    where = "ClusterPolicy spec.dcgmExporter.enabled" if cp.get("exists") else "dcgmExporter.enabled"
    if enabled is not False:
        return ok("%s is true" % where)
    return bad(
        "%s is false: no GPU metrics" % where, "Set dcgmExporter.enabled=true (gpu_baseline_dcgm_exporter_enabled)."
    )


@check("runtime.version", "cluster", "warn", "Each GPU node's container runtime is in the release's range")
def _runtime_version(cluster, hosts, opts):
    rel = opts["release"]
    wrong, seen, subjects = [], 0, []
    for h, node in sorted(_mapped_nodes(cluster, hosts).items()):
        if node is None or not node.get("container_runtime_version"):
            continue
        seen += 1
        crv = node["container_runtime_version"]
        if crv.startswith("containerd://"):
            if not compat.in_range(crv, rel["containerd"]):
                wrong.append("%s %s" % (node["name"], crv))
                subjects.append(h)
        elif crv.startswith("cri-o://"):
            os_ = _g(hosts[h], "gpu_host", "os", default={})
            if not rel["cri_o"] or os_.get("version_id") in (rel.get("cri_o_unsupported_os") or {}).get(
                os_.get("id"), []
            ):
                wrong.append("%s %s on %s %s" % (node["name"], crv, os_.get("id"), os_.get("version_id")))
                subjects.append(h)
    if not seen:
        return na("no node reports its container runtime")
    if not wrong:
        return ok("%d node(s) run a runtime operator %s lists" % (seen, rel["release"]))
    return bad(
        "outside operator %s's validated runtimes (containerd %s-%s): %s"
        % (rel["release"], rel["containerd"][0], rel["containerd"][1], ", ".join(wrong)),
        "Upgrade containerd into %s-%s; an unvalidated runtime may work but is not supported."
        % tuple(rel["containerd"]),
        subjects=subjects,
    )


#: Drift dimensions: name -> function(host) giving the value compared within a pool.
def _drift_driver(h):
    return _host_driver(h)[0]


DRIFT = (
    ("driver", _drift_driver),
    ("kernel", lambda h: _g(h, "gpu_host", "kernel", "release")),
    ("os", lambda h: " ".join(str(x) for x in (_g(h, "gpu_host", "os", "id"), _g(h, "gpu_host", "os", "version_id")))),
    ("gpu_model", lambda h: ", ".join(sorted({g.get("name") or "?" for g in _g(h, "nvidia_gpu", "gpus", default=[])}))),
    (
        "runtime",
        lambda h: (
            "%s default=%s nvidia=%s cgroup_systemd=%s"
            % (
                _g(h, "gpu_host", "container_runtime", "name"),
                _g(h, "gpu_host", "container_runtime", "config", "default_runtime"),
                _g(h, "gpu_host", "container_runtime", "config", "nvidia_runtime"),
                _g(h, "gpu_host", "container_runtime", "config", "systemd_cgroup"),
            )
        ),
    ),
    (
        "toolkit",
        lambda h: (
            "installed=%s mode=%s"
            % (_g(h, "gpu_host", "container_toolkit", "installed"), _g(h, "gpu_host", "container_toolkit", "mode"))
        ),
    ),
)


def drift(hosts):
    """Per pool, each dimension with more than one value: ``[{pool, dimension, values: {value: [hosts]}}]``."""
    pools = {}
    for name, h in hosts.items():
        if h.get("gpu_host"):  # a host without facts is reported by hosts.gathered, not as drift
            pools.setdefault(h.get("pool") or "(no pool)", []).append(name)
    out = []
    for pool in sorted(pools):
        for dim, fn in DRIFT:
            values = {}
            for name in sorted(pools[pool]):
                values.setdefault(str(fn(hosts[name]) or "unknown"), []).append(name)
            if len(values) > 1:
                out.append({"pool": pool, "dimension": dim, "values": values})
    return out


@check("fleet.drift", "cluster", "warn", "Hosts of a pool agree on driver, kernel, OS, GPU, runtime and toolkit")
def _drift(cluster, hosts, opts):
    found = drift(hosts)
    subjects = sorted({h for d in found for hs in d["values"].values() for h in hs})
    if not found:
        return ok("no drift within %d pool(s)" % len({h.get("pool") for h in hosts.values()}))
    return bad(
        "; ".join(
            "pool %s %s: %s"
            % (
                d["pool"],
                d["dimension"],
                " vs ".join("%s (%s)" % (v, ", ".join(hs)) for v, hs in sorted(d["values"].items())),
            )
            for d in found
        ),
        "Bring every host of a pool to the same driver, kernel, OS, runtime and toolkit configuration, or split "
        "the pool.",
        subjects=subjects,
    )


# -- evaluation ----------------------------------------------------------------------------------------------


def _result(check_id, scope, severity, title, outcome, opts):
    sev = opts["severity"].get(check_id, severity)
    res = {"id": check_id, "scope": scope, "severity": sev, "title": title, "status": outcome.status}
    res["evidence"] = outcome.evidence
    res["fix"] = outcome.fix if outcome.status == FAIL else None
    if scope == "cluster":
        res["subjects"] = outcome.subjects
    return res


def _skipped(check_id, scope, severity, title, opts):
    return _result(check_id, scope, severity, title, Outcome(SKIPPED, "skipped by gpu_baseline_skip"), opts)


def _verdict(results):
    fails = [r for r in results if r["status"] == FAIL]
    if any(r["severity"] == "fail" for r in fails):
        return "fail"
    if any(r["severity"] == "warn" for r in fails):
        return "warn"
    return "pass"


def evaluate_host(ctx, opts):
    """Every host check (and user check with scope host) for one host: ``{results, verdict, findings}``."""
    results = []
    for cid in sorted(REGISTRY):
        c = REGISTRY[cid]
        if c.scope != "host":
            continue
        if cid in opts["skip"]:
            results.append(_skipped(cid, "host", c.severity, c.title, opts))
            continue
        results.append(_result(cid, "host", c.severity, c.title, c.fn(ctx, opts), opts))
    for uc in opts["user_checks"]:
        if (uc.get("scope") or "host") != "host":
            continue
        results.append(_user_result(uc, (ctx.get("user_checks") or {}).get(uc["id"]), opts))
    return _summarise(results)


def _user_result(uc, value, opts):
    sev = uc.get("severity", "fail")
    title = uc.get("description") or uc["id"]
    if uc["id"] in opts["skip"]:
        return _skipped(uc["id"], uc.get("scope") or "host", sev, title, opts)
    value = value if value is not None else uc
    failed = value.get("failed")
    if isinstance(failed, str):
        failed = failed.strip().lower() in ("true", "yes", "1")
    outcome = (
        bad(value.get("evidence") or "user check %s failed" % uc["id"], uc.get("fix") or "See the check's description.")
        if failed
        else ok(value.get("pass_evidence") or value.get("evidence") or "user check %s passed" % uc["id"])
    )
    return _result(uc["id"], uc.get("scope") or "host", sev, title, outcome, opts)


def finding_line(f):
    return "%s [%s]: %s -- fix: %s" % (f["id"], f["severity"], f["evidence"], f["fix"])


def _summarise(results):
    findings = [r for r in results if r["status"] == FAIL]
    return {
        "results": results,
        "verdict": _verdict(results),
        "findings": findings,
        "lines": [finding_line(f) for f in findings],
    }


def evaluate_cluster(cluster, hosts, opts):
    """Every cluster check (and user check with scope cluster) over the cluster view and all hosts."""
    results = []
    for cid in sorted(REGISTRY):
        c = REGISTRY[cid]
        if c.scope != "cluster":
            continue
        if cid in opts["skip"]:
            results.append(_skipped(cid, "cluster", c.severity, c.title, opts))
            continue
        results.append(_result(cid, "cluster", c.severity, c.title, c.fn(cluster, hosts, opts), opts))
    for uc in opts["user_checks"]:
        if uc.get("scope") == "cluster":
            results.append(_user_result(uc, None, opts))
    return _summarise(results)


def report(hosts, cluster, raw_options):
    """The whole baseline: per-host results (host checks plus the cluster findings naming the host), cluster
    results, drift per pool, counts and the overall verdict.

    ``hosts`` maps inventory names to ``{node_name, pool, gpu_host, nvidia_gpu, gpu_node_labels,
    gpu_node_taints, user_checks, baseline}`` where ``baseline`` is a host's own ``evaluate_host`` result when
    the host play already made it (else it is computed here).
    """
    opts = options(raw_options)
    per_host = {}
    for name in sorted(hosts):
        h = hosts[name]
        if h.get("baseline"):
            own = h["baseline"]
        elif h.get("gpu_host"):
            own = evaluate_host(h, opts)
        else:  # no facts: hosts.gathered reports it; evaluating empty facts would only add noise
            own = _summarise([])
        per_host[name] = {
            "node": h.get("node_name") or name,
            "pool": h.get("pool"),
            "verdict": own["verdict"],
            "results": own["results"],
            "findings": own["findings"],
        }
    cl = evaluate_cluster(cluster or {}, hosts, opts) if cluster is not None else _summarise([])
    # A cluster finding about a host (or its node) is that host's finding too.
    for r in cl["findings"]:
        subjects = set(r.get("subjects") or [])
        for name, row in per_host.items():
            if name in subjects or row["node"] in subjects:
                row["findings"] = row["findings"] + [r]
                row["verdict"] = _verdict(row["findings"])
    counts = {"pass": 0, "warn": 0, "fail": 0}
    for row in per_host.values():
        counts[row["verdict"]] += 1
    overall = _verdict([f for row in per_host.values() for f in row["findings"]] + cl["findings"])
    lines = ["%s: %s" % (name, finding_line(f)) for name, row in sorted(per_host.items()) for f in row["findings"]]
    lines += ["cluster: %s" % finding_line(f) for f in cl["findings"] if not f.get("subjects")]
    return {
        "operator_version": opts["operator_version"],
        "release": opts["release"]["release"],
        "data_version": opts["release"]["data_version"],
        "driver_policy": opts["driver_policy"],
        "target_driver": target_driver(opts) if _operator_managed(opts) else None,
        "hosts": per_host,
        "cluster": cl,
        "drift": drift(hosts),
        "counts": counts,
        "verdict": overall,
        "lines": lines or ["all %d GPU host(s) pass the baseline" % len(per_host)],
    }


def should_fail(rep, fail_on):
    """True when the report has a finding at or above ``fail_on`` (``fail``, ``warn`` or ``never``)."""
    if fail_on == "never":
        return False
    if fail_on == "warn":
        return rep["verdict"] in ("fail", "warn")
    return rep["verdict"] == "fail"


def markdown(rep):
    """The report as Markdown: verdict, one line per failing host with its fixes, cluster checks, drift."""
    out = [
        "# GPU baseline: %s" % rep["verdict"].upper(),
        "",
        "Operator %s (matrix release %s, data %s), driver policy %s%s."
        % (
            rep["operator_version"],
            rep["release"],
            rep["data_version"],
            rep["driver_policy"],
            ", target driver %s" % rep["target_driver"] if rep["target_driver"] else "",
        ),
        "",
        "Hosts: %(pass)d pass, %(warn)d warn, %(fail)d fail." % rep["counts"],
        "",
        "## Hosts",
        "",
        "| host | node | pool | verdict | findings |",
        "|---|---|---|---|---|",
    ]
    for name, row in sorted(rep["hosts"].items()):
        ids = ", ".join("%s (%s)" % (f["id"], f["severity"]) for f in row["findings"]) or "-"
        out.append("| %s | %s | %s | %s | %s |" % (name, row["node"], row["pool"] or "-", row["verdict"], ids))
    failing = [(n, r) for n, r in sorted(rep["hosts"].items()) if r["findings"]]
    if failing:
        out += ["", "## Findings and fixes", ""]
        for name, row in failing:
            out.append("### %s (%s)" % (name, row["verdict"]))
            out.append("")
            for f in row["findings"]:
                out.append("- **%s** [%s]: %s  " % (f["id"], f["severity"], f["evidence"]))
                out.append("  Fix: %s" % f["fix"])
            out.append("")
        if out[-1] == "":
            out.pop()
    out += ["", "## Cluster checks", "", "| check | severity | status | evidence |", "|---|---|---|---|"]
    for r in rep["cluster"]["results"]:
        out.append("| %s | %s | %s | %s |" % (r["id"], r["severity"], r["status"], _cell(r["evidence"])))
    for r in rep["cluster"]["findings"]:
        out.append("")
        out.append("- **%s** fix: %s" % (r["id"], r["fix"]))
    out += ["", "## Drift per pool", ""]
    if not rep["drift"]:
        out.append("No drift.")
    for d in rep["drift"]:
        out.append(
            "- pool %s, %s: %s"
            % (
                d["pool"],
                d["dimension"],
                "; ".join("%s on %s" % (v, ", ".join(hs)) for v, hs in sorted(d["values"].items())),
            )
        )
    return "\n".join(out) + "\n"


def _cell(text):
    return str(text or "").replace("|", "\\|").replace("\n", " ")


def catalogue():
    """Every built-in check: ``[{id, scope, severity, title}]`` sorted by id (for docs and the lookup)."""
    return [
        {"id": c.id, "scope": c.scope, "severity": c.severity, "title": c.title}
        for c in sorted(REGISTRY.values(), key=lambda c: c.id)
    ]
