# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""Kernel facts: release and headers, the command line, NVIDIA and nouveau modules, the loaded NVIDIA driver."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import platform
import re

MODULES = ("nvidia", "nvidia_uvm", "nvidia_modeset", "nvidia_drm", "nvidia_peermem", "nouveau")
MODPROBE_DIRS = ("etc/modprobe.d", "usr/lib/modprobe.d", "lib/modprobe.d", "run/modprobe.d")

NVRM_RE = re.compile(r"^NVRM version:\s+(?P<desc>.*?)\s+(?P<version>\d+\.\d+(?:\.\d+)?)\s", re.M)
GCC_RE = re.compile(r"^GCC version:\s+(?P<gcc>.+)$", re.M)


def parse_nvidia_version(text):
    """Parse /proc/driver/nvidia/version; None when no NVRM line."""
    m = NVRM_RE.search(text)
    if not m:
        return None
    gcc = GCC_RE.search(text)
    return {
        "version": m.group("version"),
        "flavor": "open" if "Open Kernel Module" in m.group("desc") else "proprietary",
        "gcc": gcc.group("gcc").strip() if gcc else None,
    }


def parse_modprobe(text):
    """(blacklisted modules, {module: options}) from modprobe.d text."""
    black, opts = set(), {}
    for line in text.splitlines():
        words = line.split("#", 1)[0].split()
        if len(words) >= 2 and words[0] == "blacklist":
            black.add(words[1])
        elif len(words) >= 3 and words[0] == "options":
            opts.setdefault(words[1], {}).update(dict(w.partition("=")[::2] for w in words[2:]))
        elif len(words) >= 3 and words[0] == "install" and words[2] in ("/bin/false", "/bin/true", "/usr/bin/false"):
            black.add(words[1])
    return black, opts


def parse_cmdline(text):
    """Kernel arguments as ``{name: value}`` (``True`` for a bare flag), up to ``--`` (the rest goes to init)."""
    args = {}
    for word in (text or "").split():
        if word == "--":
            break
        key, sep, value = word.partition("=")
        args[key] = value if sep else True
    return args


def read_kernel(r, facts):
    """Release, version, architecture and whether headers for the running kernel are present."""
    release = (r.read("proc/sys/kernel/osrelease", required=True) or "").strip() or None
    version = (r.read("proc/sys/kernel/version") or "").strip() or None
    arch = (r.read("proc/sys/kernel/arch") or "").strip() or None
    if arch is None and r.root == "/":
        arch = platform.machine()
    headers = None
    if release:
        headers = any(
            r.resolves(p)
            for p in (
                "lib/modules/%s/build" % release,
                "usr/src/kernels/%s" % release,
                "usr/src/linux-headers-%s" % release,
            )
        )
    return {"release": release, "version": version, "architecture": arch, "headers_present": headers}


def read_cmdline(r, facts):
    """The raw kernel command line and its parsed arguments."""
    text = (r.read("proc/cmdline", required=True) or "").strip()
    return {"raw": text or None, "args": parse_cmdline(text)}


def read_modules(r, facts):
    """Per module in :data:`MODULES`, whether it is loaded and its refcount."""
    out = {}
    for name in MODULES:
        loaded = r.exists("sys/module/%s" % name)
        refcnt = None
        if loaded:
            raw = r.read("sys/module/%s/refcnt" % name)
            try:
                refcnt = int(raw.strip()) if raw is not None else None
            except ValueError:
                r.problem("sys/module/%s/refcnt" % name, "malformed", raw[:40])
        out[name] = {"loaded": loaded, "refcount": refcnt}
    return out


def read_nouveau(r, facts):
    """Whether nouveau is loaded, blacklisted (modprobe.d or the command line) or has modeset disabled."""
    args = facts["cmdline"]["args"]
    black, opts, files = set(), {}, []
    for d in MODPROBE_DIRS:
        for name in r.listdir(d):
            if not name.endswith(".conf"):
                continue
            text = r.read("%s/%s" % (d, name))
            if text is None:
                continue
            b, o = parse_modprobe(text)
            if "nouveau" in b or "nouveau" in o:
                files.append("/%s/%s" % (d, name))
            black |= b
            for k, v in o.items():
                opts.setdefault(k, {}).update(v)
    cmd_black = "nouveau" in str(args.get("modprobe.blacklist", "")).split(",") or "nouveau" in str(
        args.get("rd.driver.blacklist", "")
    ).split(",")
    return {
        "loaded": facts["modules"]["nouveau"]["loaded"],
        "blacklisted_modprobe": "nouveau" in black,
        "modeset_disabled": opts.get("nouveau", {}).get("modeset") == "0" or args.get("nouveau.modeset") == "0",
        "blacklisted_cmdline": cmd_black,
        "blacklist_files": files,
    }


def read_nvidia_driver(r, facts):
    """The loaded NVIDIA driver from /proc/driver/nvidia/version: version, open or proprietary, GCC."""
    text = r.read("proc/driver/nvidia/version")
    parsed = parse_nvidia_version(text) if text is not None else None
    if text is not None and parsed is None:
        r.problem("proc/driver/nvidia/version", "malformed", text[:80])
    out = {"loaded": parsed is not None, "version": None, "flavor": None, "gcc": None}
    out.update(parsed or {})
    return out
