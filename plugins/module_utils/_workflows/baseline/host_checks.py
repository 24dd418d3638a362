# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change incompatibly at any
# time, including in a patch release. Do not use it elsewhere.

"""Host checks of the OS, kernel, container runtime (NRI included) and GPUs (the driver's own checks are in
driver_checks)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator import compat
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline.facts import (
    DRIVER_SOURCE,
    driver_unknown,
    fact,
    host_driver,
    operator_managed,
    unknown_in,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline.model import (
    bad,
    check,
    na,
    ok,
    unknown,
    unread,
)

#: Containerd paths the GPU Operator's toolkit must be told about on non-kubeadm distributions
#: (gpu-operator.md s3; gpu_host_facts reports the host's own paths).
_RUNTIME_ENV = ("CONTAINERD_CONFIG", "CONTAINERD_SOCKET")
_STOCK_CONTAINERD = ("/etc/containerd/config.toml", "/run/containerd/containerd.sock")
_MODPROBE = (
    "/etc/modprobe.d",
    "/run/modprobe.d",
    "/usr/local/lib/modprobe.d",
    "/usr/lib/modprobe.d",
    "/lib/modprobe.d",
)
_UNITS = ("/etc/systemd/system", "/lib/systemd/system", "/usr/lib/systemd/system")
#: Runtime -> how to enable NRI in its config (the k3s/RKE2 template where there is one: it renders the config).
_NRI_FIX = {
    "containerd": 'Add [plugins."io.containerd.nri.v1.nri"] with disable = false to %s (containerd 1.7 ships it '
    "disabled) and restart containerd.",
    "cri-o": "Set enable_nri = true under [crio.nri] in %s or a crio.conf.d drop-in and restart crio.",
}
#: Runtime -> its NRI default when the config leaves NRI unset.
_NRI_DEFAULT = {"containerd": "off in 1.7, on from 2.0", "cri-o": "on from 1.30"}
_UPDATES = ("/etc/apt/apt.conf.d", "/etc/dnf", "/etc/systemd/system/timers.target.wants")


@check("kernel.headers", "host", "fail", "Kernel headers for the running kernel (driver container build)")
def _kernel_headers(ctx, opts):
    if not operator_managed(opts):
        return na("the host's own driver is used; the operator builds no module")
    if opts["use_precompiled"]:
        return na("precompiled driver images need no headers")
    k = fact(ctx, "gpu_host", "kernel", default={})
    if unknown_in(k, "headers_present"):
        return unknown(
            ctx,
            "whether headers for kernel %s are present" % k.get("release"),
            "/proc/sys/kernel",
            "/lib/modules",
            "/usr/src",
        )
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
    n = fact(ctx, "gpu_host", "nouveau", default={})
    if unknown_in(n, "loaded"):
        return unknown(ctx, "whether nouveau is loaded", "/sys/module")
    if not n.get("loaded"):
        return ok("nouveau is not loaded")
    return bad(
        "the nouveau module is loaded (/sys/module/nouveau)",
        "Blacklist nouveau (blacklist nouveau and options nouveau modeset=0 in /etc/modprobe.d/), "
        "rebuild the initramfs (update-initramfs -u or dracut -f) and reboot.",
    )


@check("nouveau.blacklisted", "host", "warn", "nouveau is blacklisted for the next boot")
def _nouveau_blacklisted(ctx, opts):
    n = fact(ctx, "gpu_host", "nouveau", default={})
    if n.get("blacklisted_modprobe") or n.get("blacklisted_cmdline"):
        return ok("nouveau is blacklisted (%s)" % (", ".join(n.get("blacklist_files") or []) or "kernel cmdline"))
    if unknown_in(n, "blacklisted_modprobe", "blacklisted_cmdline"):
        return unknown(ctx, "whether nouveau is blacklisted", "/proc/cmdline", *_MODPROBE)
    return bad(
        "nouveau is not blacklisted in modprobe.d or on the kernel command line",
        "Add /etc/modprobe.d/blacklist-nouveau.conf with 'blacklist nouveau' and 'options nouveau modeset=0', "
        "then rebuild the initramfs.",
    )


@check("secure_boot.driver", "host", "fail", "Secure Boot accepts the driver's kernel modules")
def _secure_boot(ctx, opts):
    sb = fact(ctx, "gpu_host", "secure_boot", default={})
    if unknown_in(sb, "efi") or sb.get("efi") and unknown_in(sb, "enabled"):
        return unknown(ctx, "whether Secure Boot is on", "/sys/firmware/efi")
    if not sb.get("enabled"):
        return ok("Secure Boot is off" if sb.get("efi") else "not an EFI boot; no Secure Boot")
    if operator_managed(opts) and not opts["use_precompiled"]:
        return bad(
            "Secure Boot is on and the operator would build and load an unsigned driver module",
            "Use a host-installed signed driver (gpu_baseline_driver_policy=preinstalled, driver.enabled=false) "
            "or signed precompiled driver images (driver.usePrecompiled=true), or disable Secure Boot.",
        )
    version, _flavor = host_driver(ctx)
    if not operator_managed(opts) and not version and driver_unknown(ctx):
        return unknown(ctx, "whether the host's NVIDIA driver is loaded", DRIVER_SOURCE)
    if not operator_managed(opts) and not version:
        return bad(
            "Secure Boot is on and no NVIDIA driver is loaded on the host",
            "Install a driver signed with a key enrolled in the MOK list (mokutil --import) and load it.",
        )
    return ok("Secure Boot is on; the loaded or precompiled driver is signed")


@check("os.supported", "host", "fail", "The OS is in the target release's support matrix")
def _os_supported(ctx, opts):
    os_ = fact(ctx, "gpu_host", "os", default={})
    if unknown_in(os_, "id"):
        return unknown(ctx, "the OS", "/etc/os-release", "/usr/lib/os-release")
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
    rt = fact(ctx, "gpu_host", "container_runtime", default={})
    distro = fact(ctx, "gpu_host", "kubernetes", "distribution")
    if rt.get("name") != "containerd":
        return na("container runtime is %s" % (rt.get("name") or "not detected"))
    if unknown_in(rt, "socket_present"):
        return unknown(
            ctx,
            "which containerd %s uses and whether its socket exists" % (distro or "the host"),
            "/etc/rancher",
            str(rt.get("socket")),
        )
    if not rt.get("socket_present"):
        return bad(
            "containerd socket %s is missing (config %s)" % (rt.get("socket"), rt.get("config_path")),
            "Start containerd, or point CONTAINERD_SOCKET in gpu_baseline_toolkit_env at the socket in use.",
        )
    if opts["nri_plugin"]:
        return ok(
            "containerd socket %s is present; in NRI plugin mode the toolkit edits no containerd config" % rt["socket"]
        )
    if distro in (None, "kubeadm") or (rt.get("config_path"), rt.get("socket")) == _STOCK_CONTAINERD:
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


@check("runtime.nri_enabled", "host", "fail", "NRI is enabled in the container runtime in NRI plugin mode")
def _nri_enabled(ctx, opts):
    if not opts["nri_plugin"]:
        return na("gpu_baseline_nri_plugin is false (cdi.nriPluginEnabled)")
    rt = fact(ctx, "gpu_host", "container_runtime", default={})
    if rt.get("name") not in _NRI_FIX:
        return bad(
            "NRI plugin mode needs containerd or CRI-O; the container runtime is %s"
            % (rt.get("name") or "not detected"),
            "Run the node on containerd or CRI-O, or install without cdi.nriPluginEnabled (gpu_baseline_nri_plugin).",
        )
    if rt.get("config") is None:
        return unknown(ctx, "whether NRI is enabled in %s's config" % rt["name"], str(rt.get("config_path")))
    enabled = rt["config"].get("nri_enabled")
    fix = _NRI_FIX[rt["name"]] % (rt.get("template_path") or rt["config_path"])
    if enabled:
        return ok("NRI is enabled in %s (%s)" % (rt["config_path"], rt["name"]))
    if enabled is None:  # the config leaves it to the runtime's default, which depends on the version it runs
        return unread(
            "whether NRI is on: %s leaves it to %s's default (%s); runtime.nri_version judges the node's version"
            % (rt["config_path"], rt["name"], _NRI_DEFAULT[rt["name"]]),
            "Make it explicit: " + fix,
        )
    return bad(
        "NRI is disabled in %s (%s): the operator's NRI plugin cannot inject GPUs" % (rt["config_path"], rt["name"]),
        fix,
    )


@check("fabric_manager.nvswitch", "host", "fail", "NVSwitch systems run Fabric Manager")
def _fabric_manager(ctx, opts):
    fm = fact(ctx, "gpu_host", "fabric_manager", default={})
    pci = fact(ctx, "gpu_host", "pci", default={})
    switches = pci.get("nvswitch_count", 0)
    if switches is None or not switches and pci.get("unresolved_count"):
        return unknown(ctx, "how many NVSwitches the PCI bus has", "/sys")
    if not switches:
        return na("no NVSwitch on the PCI bus")
    stuck = sorted(
        "GPU %s %s" % (g.get("index"), fact(g, "fabric", "state"))
        for g in fact(ctx, "nvidia_gpu", "gpus", default=[]) or []
        if fact(g, "fabric", "state") in ("not_started", "in_progress")
    )
    if stuck:
        return bad(
            "%d NVSwitch(es); fabric registration not complete: %s" % (switches, ", ".join(stuck)),
            "Start nvidia-fabricmanager (same version as the driver) and check its log.",
        )
    if operator_managed(opts):
        return ok("%d NVSwitch(es); the operator's driver container starts Fabric Manager" % switches)
    if fm.get("installed") and fm.get("enabled"):
        return ok("%d NVSwitch(es); nvidia-fabricmanager is installed and enabled" % switches)
    if unknown_in(fm, "installed", "enabled"):
        return unknown(ctx, "whether nvidia-fabricmanager is installed and enabled", *_UNITS)
    return bad(
        "%d NVSwitch(es) but nvidia-fabricmanager is %s"
        % (switches, "not enabled" if fm.get("installed") else "not installed"),
        "Install nvidia-fabricmanager-<driver branch> matching the host driver and systemctl enable --now "
        "nvidia-fabricmanager.",
    )


@check("unattended_upgrades.kernel", "host", "warn", "Automatic updates do not replace the kernel")
def _unattended(ctx, opts):
    uu = fact(ctx, "gpu_host", "unattended_upgrades", default={})
    if unknown_in(uu, "enabled") or uu.get("enabled") and uu.get("tool") and unknown_in(uu, "kernel_blacklisted"):
        return unknown(ctx, "whether automatic updates may replace the kernel", *_UPDATES)
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
    devices = fact(ctx, "gpu_host", "devices", default={})
    if unknown_in(devices, "nodes") or devices.get("nodes") and unknown_in(devices, "char_links_missing"):
        return unknown(ctx, "the /dev/nvidia* nodes and their /dev/char links", "/dev")
    missing = devices.get("char_links_missing") or []
    if not devices.get("nodes"):
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
        "GPU %s: %s" % (g.get("index"), ", ".join(fact(g, "health", "reasons", default=[])))
        for g in nvml.get("gpus") or []
        if fact(g, "health", "status") == "critical"
    )
    return bad("critical GPU health: %s" % "; ".join(reasons), "Drain the node and reset or replace the GPUs named.")


@check("host_facts.problems", "host", "warn", "Every host fact source was readable")
def _problems(ctx, opts):
    problems = fact(ctx, "gpu_host", "problems", default=[]) or []
    if not problems:
        return ok("no unreadable or malformed host files")
    return bad(
        "; ".join("%s %s" % (p.get("source"), p.get("reason")) for p in problems),
        "Fix or remove the files named; checks that read them may be wrong until then.",
    )
