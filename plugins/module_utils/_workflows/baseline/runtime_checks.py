# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change incompatibly at any
# time, including in a patch release. Do not use it elsewhere.

"""Host checks of what breaks nodes most often once the stack is installed: containerd config versions that do
not agree, NRI on a runtime too old for the operator's NRI plugin, a loaded NVIDIA module Secure Boot does not
trust, and precompiled driver images that do not exist for the node's kernel."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.host_facts.runtime_versions import (
    version_sources,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator import compat
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline.facts import (
    fact,
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
    unread,
)

_VERSION_FIX = (
    "Give every drop-in the root config's version: set RUNTIME_CONFIG_SOURCE=file in toolkit.env "
    "(gpu_baseline_toolkit_env) so the toolkit writes its drop-in from the file, not from `containerd config "
    "dump`; or migrate the root config (containerd config migrate > config.toml, review it) and rewrite the "
    "drop-ins at that version, then restart containerd."
)
_PRECOMPILED_REGISTRY = "nvcr.io/nvidia/driver"


@check("runtime.containerd_config_versions", "host", "fail", "containerd's root config and drop-ins agree on version")
def _config_versions(ctx, opts):
    rt = fact(ctx, "gpu_host", "container_runtime", default={}) or {}
    if rt.get("name") != "containerd":
        return na("container runtime is %s" % (rt.get("name") or "not detected"))
    if unknown_in(rt, "config_files"):
        return unknown(ctx, "the version of each containerd config file", str(rt.get("config_path")))
    files = rt.get("config_files")
    if not files:
        return na("the host facts list no containerd config file (gathered before gpu_host_facts read them)")
    root, most = files[0], compat.containerd_config_max(rt.get("version"))
    wrong = [
        "%s is version %s, newer than root config version %s" % (f["path"], f["version"], root["version"])
        for f in files[1:]
        if (f["version"] or 1) > (root["version"] or 1)
    ]
    wrong += [
        "%s is version %s, older than root config version %s" % (f["path"], f["version"], root["version"])
        for f in files[1:]
        if (f["version"] or 1) < (root["version"] or 1)
    ]
    if most is not None:
        wrong += [
            "%s is version %s: containerd %s reads up to %d (unsupported config version)"
            % (f["path"], f["version"], rt["version"], most)
            for f in files
            if (f["version"] or 1) > most
        ]
    if not wrong:
        return ok(
            "%d containerd config file(s) at version %s%s"
            % (len(files), root["version"], " (containerd %s)" % rt["version"] if rt.get("version") else "")
        )
    return bad("mixed containerd config versions: %s" % "; ".join(wrong), _VERSION_FIX)


@check("runtime.nri_supported", "host", "fail", "The host's runtime version supports NRI plugin mode")
def _nri_supported(ctx, opts):
    if not opts["nri_plugin"]:
        return na("gpu_baseline_nri_plugin is false (cdi.nriPluginEnabled)")
    rt = fact(ctx, "gpu_host", "container_runtime", default={}) or {}
    scheme = {"containerd": "containerd://", "cri-o": "cri-o://"}.get(rt.get("name"))
    if scheme is None:
        return na("runtime.nri_enabled reports a runtime other than containerd or CRI-O")
    if not rt.get("version"):
        sources = version_sources(rt["name"])
        problems = fact(ctx, "gpu_host", "problems", default=[]) or []
        if any(p.get("source") in sources for p in problems):
            return unknown(ctx, "the %s version" % rt["name"], *sources)
        return na("the host's files do not say the %s version; runtime.nri_version reads the node's" % rt["name"])
    supported, need = compat.nri_runtime(opts["operator_version"], scheme + rt["version"])
    if supported:
        return ok("%s %s (%s) supports NRI plugin mode" % (rt["name"], rt["version"], rt.get("version_source")))
    return bad(
        "NRI plugin mode needs %s; the host runs %s %s (%s)" % (need, rt["name"], rt["version"], rt["version_source"]),
        "Upgrade %s to a version named (containerd 1.7.30+, 2.1 or 2.2; CRI-O 1.34+ with operator 26.3.2+), or "
        "install without cdi.nriPluginEnabled (gpu_baseline_nri_plugin: false) to use the RuntimeClass." % rt["name"],
    )


@check("secure_boot.module_signed", "host", "fail", "Under Secure Boot the loaded NVIDIA module is signed")
def _module_signed(ctx, opts):
    sb = fact(ctx, "gpu_host", "secure_boot", default={}) or {}
    if unknown_in(sb, "enabled"):
        return unknown(ctx, "whether Secure Boot is on", "/sys/firmware/efi")
    if not sb.get("enabled"):
        return na("Secure Boot is off" if sb.get("efi") else "not an EFI boot")
    signed = sb.get("nvidia_module_signed")
    if signed is None:
        return na("no NVIDIA module is loaded, or the kernel does not say whether it checks signatures")
    if signed:
        return ok(
            "the loaded nvidia module is signed by a key the kernel trusts (%d MOK key(s) enrolled)"
            % len(sb.get("mok_keys") or [])
        )
    return bad(
        "Secure Boot is on and the loaded nvidia module is unsigned (taint E in /proc/modules; %d MOK key(s) "
        "enrolled): signature checks are off now, and the next boot that enforces them rejects the module"
        % len(sb.get("mok_keys") or []),
        "Sign the NVIDIA modules with a key enrolled in the MOK list (kmodsign or sign-file; mokutil --import the "
        "key and confirm at the next boot), or use a signed driver: the distribution's signed packages or signed "
        "precompiled driver images (driver.usePrecompiled=true).",
    )


@check("driver.precompiled_image", "host", "fail", "A precompiled driver image exists for the node's kernel")
def _precompiled_image(ctx, opts):
    if not operator_managed(opts) or not opts["use_precompiled"]:
        return na("precompiled drivers are not requested (gpu_baseline_use_precompiled)")
    k, os_ = fact(ctx, "gpu_host", "kernel", default={}) or {}, fact(ctx, "gpu_host", "os", default={}) or {}
    if not k.get("release") or not os_.get("id") or not os_.get("version_id"):
        return unknown(ctx, "the kernel release and OS", "/proc/sys/kernel", "/etc/os-release")
    branch = compat.driver_branch(target_driver(opts))
    tag = compat.precompiled_tag(opts["operator_version"], branch, k["release"], os_["id"], os_["version_id"])
    available = opts["precompiled_tags"]
    if available is None:
        return unread(
            "whether %s:%s exists (give gpu_baseline_precompiled_tags, the registry's tags)"
            % (_PRECOMPILED_REGISTRY, tag),
            "Check that the tag exists in the registry the operator pulls from (for example skopeo list-tags "
            "docker://%s) before installing with driver.usePrecompiled=true." % _PRECOMPILED_REGISTRY,
        )
    if tag in available:
        return ok("precompiled image %s:%s is listed" % (_PRECOMPILED_REGISTRY, tag))
    same_os = sorted(t for t in available if t.startswith("%s-" % branch) and t.endswith(tag.rsplit("-", 1)[1]))
    return bad(
        "no precompiled driver image %s:%s for kernel %s (R%s images for this OS: %s)"
        % (_PRECOMPILED_REGISTRY, tag, k["release"], branch, ", ".join(same_os) or "none"),
        "Boot a kernel that has an image (pin it, and keep automatic updates from replacing it), or install "
        "without driver.usePrecompiled so the driver container builds the module against the kernel headers.",
    )
