# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""Kernel facts: release, architecture and headers, the command line, NVIDIA and nouveau modules, the loaded
NVIDIA driver."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import platform
import re

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.host_facts.modprobe import (
    blacklisted,
    option_is,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.host_facts.reader import tri_any

MODULES = ("nvidia", "nvidia_uvm", "nvidia_modeset", "nvidia_drm", "nvidia_peermem", "nouveau", "vfio_pci")
NVIDIA_VERSION = "proc/driver/nvidia/version"
#: Command-line parameters whose every occurrence counts (libkmod, dracut); others keep the last one.
MERGED_PARAMS = ("modprobe.blacklist", "rd.driver.blacklist")

NVRM_RE = re.compile(r"^NVRM version:\s+(?P<desc>.*?)\s+(?P<version>\d+\.\d+(?:\.\d+)?)\s", re.M)
GCC_RE = re.compile(r"^GCC version:\s+(?P<gcc>.+)$", re.M)
#: A release that names its architecture (RHEL, Fedora, Amazon Linux: ``.x86_64``; Debian: ``-amd64``).
RELEASE_RE = re.compile(r"^\d+\.\d+\S*$")
VERSION_RE = re.compile(r"^#\d+")
RELEASE_ARCH_RE = re.compile(r"[.-](x86_64|aarch64|ppc64le|s390x|amd64|arm64)$")
ARCH_NAMES = {"amd64": "x86_64", "arm64": "aarch64", "powerpc64le": "ppc64le"}
#: ``NVRM version: NVIDIA UNIX x86_64 Kernel Module`` or ``... Open Kernel Module for aarch64``.
NVRM_ARCH_RE = re.compile(r"^NVRM version: NVIDIA UNIX (?:Open Kernel Module for )?(x86_64|aarch64|ppc64le)\b", re.M)
#: /proc/version names the compiler that built the kernel: ``(x86_64-linux-gnu-gcc-13 ...)``.
BUILD_ARCH_RE = re.compile(r"\b(x86_64|aarch64|powerpc64le|s390x)-(?:linux|redhat-linux|suse-linux)")
#: /proc/modules: name, size, references, users, state, address, then taint flags in parentheses.
MODULE_LINE_RE = re.compile(
    r"^(?P<name>\S+) (?P<size>\d+) (?P<refs>-?\d+) (?P<users>\S+) (?P<state>Live|Loading|Unloading) \S+"
    r"(?: \((?P<taints>[A-Z]+)\))?$"
)
#: Kernel config symbol -> architecture (uname -m), first match wins.
CONFIG_ARCH = (
    ("CONFIG_X86_64", "x86_64"),
    ("CONFIG_ARM64", "aarch64"),
    ("CONFIG_PPC64", "ppc64"),
    ("CONFIG_S390", "s390x"),
)


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


def _cmdline_words(text):
    """The words of a kernel command line as the kernel's ``next_arg`` splits them: blanks separate words except
    inside double quotes, which are dropped (``opt="a b"`` is ``opt=a b``)."""
    words, word, quoted, started = [], [], False, False
    for ch in text:
        if ch == '"':
            quoted, started = not quoted, True
        elif ch.isspace() and not quoted:
            if started:
                words.append("".join(word))
            word, started = [], False
        else:
            word.append(ch)
            started = True
    if started:
        words.append("".join(word))
    return words


def param_name(name):
    """A parameter name as the kernel and libkmod compare them (``-`` and ``_`` alike)."""
    return name.replace("-", "_")


def parse_cmdline(text):
    """Kernel arguments as ``{name: value}`` (``True`` for a bare flag), up to ``--`` (the rest goes to init).

    A repeated argument keeps its last value, as the kernel's own parameters do, except those in
    :data:`MERGED_PARAMS` (libkmod's ``modprobe.blacklist``, dracut's ``rd.driver.blacklist``), whose
    comma-separated values add up over every occurrence."""
    args = {}
    for word in _cmdline_words(text or ""):
        if word == "--":
            break
        key, sep, value = word.partition("=")
        if sep and param_name(key) in MERGED_PARAMS and isinstance(args.get(key), str):
            args[key] = "%s,%s" % (args[key], value)
        else:
            args[key] = value if sep else True
    return args


def parse_kernel_config(text):
    """``{CONFIG_X: value}`` of a kernel .config; ``# CONFIG_X is not set`` lines are comments."""
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, sep, value = line.partition("=")
            if sep:
                out[key] = value
    return out


def config_architecture(config):
    """``uname -m`` of the kernel a parsed .config was built for; None when it names no known architecture."""
    for symbol, arch in CONFIG_ARCH:
        if config.get(symbol) == "y":
            if arch == "ppc64" and config.get("CONFIG_CPU_LITTLE_ENDIAN") == "y":
                return "ppc64le"
            return arch
    return None


def _line(r, rel, pattern, required=False):
    """The one line of a /proc file; None when absent, unreadable or not ``pattern`` (malformed)."""
    text = (r.read(rel, required=required) or "").strip()
    if text and not pattern.match(text):
        r.problem(rel, "malformed", text[:80])
    return text if pattern.match(text) else None


def _architecture(r, release):
    """From /proc/sys/kernel/arch, uname (only when reading /), the loaded NVIDIA module's or the kernel's build
    line (/proc/driver/nvidia/version, /proc/version), the kernel's config or its release name."""
    arch = (r.read("proc/sys/kernel/arch") or "").strip()
    if arch:
        return arch
    if r.root == "/":
        return platform.machine()
    for rel, pattern in ((NVIDIA_VERSION, NVRM_ARCH_RE), ("proc/version", BUILD_ARCH_RE)):
        m = pattern.search(r.read(rel) or "")
        if m:
            return ARCH_NAMES.get(m.group(1), m.group(1))
    if release:
        for rel in ("boot/config-%s" % release, "lib/modules/%s/config" % release):
            text = r.read(rel)
            if text is not None:
                arch = config_architecture(parse_kernel_config(text))
                if arch:
                    return arch
                r.problem(rel, "malformed", "names no known architecture")
        m = RELEASE_ARCH_RE.search(release)
        if m:
            return ARCH_NAMES.get(m.group(1), m.group(1))
    if not r.mounted("proc"):
        return None  # /proc itself is the problem
    r.problem(
        "proc/sys/kernel/arch",
        "missing",
        "and no /boot/config-<release>, /lib/modules/<release>/config or architecture in the release",
    )
    return None


def _headers(r, release):
    """(present, path): the first of lib/modules/<rel>/build, usr/src/kernels/<rel>, usr/src/linux-headers-<rel>
    that resolves in the host root (a dangling link is a problem of the reader); unknown lookups make ``present``
    None."""
    if not release:
        return None, None
    states = []
    for rel in ("lib/modules/%s/build" % release, "usr/src/kernels/%s" % release, "usr/src/linux-headers-%s" % release):
        found = r.resolve(rel)
        if found:
            return True, "/" + found
        states.append(False if r.absent(rel) else None)
    return tri_any(states), None


def read_kernel(r, facts):
    """Release, version, architecture, and where headers for the running kernel are."""
    release = _line(r, "proc/sys/kernel/osrelease", RELEASE_RE, required=True)
    version = _line(r, "proc/sys/kernel/version", VERSION_RE)
    present, path = _headers(r, release)
    return {
        "release": release,
        "version": version,
        "architecture": _architecture(r, release),
        "headers_present": present,
        "headers_path": path,
    }


def read_cmdline(r, facts):
    """The raw kernel command line and its parsed arguments; both None when it is unread or empty (a booted
    kernel's command line is never empty: an empty file is a problem, not an empty answer)."""
    text = r.read("proc/cmdline", required=True)
    if text is not None and not text.strip():
        r.problem("proc/cmdline", "malformed", "empty; a booted kernel's command line is never empty")
        text = None
    return {"raw": text.strip() if text is not None else None, "args": parse_cmdline(text) if text else None}


def read_modules(r, facts):
    """Per module in :data:`MODULES`, whether it is loaded (None when unknown) and its refcount."""
    out = {}
    for name in MODULES:
        loaded = r.present("sys/module/%s" % name)
        refcnt = None
        if loaded:
            rel = "sys/module/%s/refcnt" % name
            raw = r.read(rel)
            try:
                refcnt = int(raw.strip()) if raw is not None else None
            except ValueError:
                r.problem(rel, "malformed", raw[:40])
        out[name] = {"loaded": loaded, "refcount": refcnt}
    return out


def parse_proc_modules(text):
    """(``[{name, size, refcount, used_by, state, taints}]``, count of lines that are not /proc/modules lines).
    ``taints`` are the module's flags: ``P`` proprietary, ``O`` out of tree, ``E`` unsigned, ``F`` forced..."""
    out, bad = [], 0
    for line in text.splitlines():
        m = MODULE_LINE_RE.match(line.strip())
        if not m:
            bad += bool(line.strip())
            continue
        users = m.group("users")
        out.append(
            {
                "name": m.group("name"),
                "size": int(m.group("size")),
                "refcount": int(m.group("refs")),
                "used_by": [u for u in users.split(",") if u] if users != "-" else [],
                "state": m.group("state").lower(),
                "taints": m.group("taints") or "",
            }
        )
    return out, bad


def read_loaded_modules(r, facts):
    """Every loaded kernel module from /proc/modules, in its order, and how many; both None when it could not be
    read whole."""
    text = r.read("proc/modules", required=True)
    modules, bad = parse_proc_modules(text) if text is not None else (None, 0)
    if text is not None and (bad or not modules):
        r.problem("proc/modules", "malformed", "%d line(s) are not module lines" % bad if bad else "empty")
        modules = None
    return {"count": len(modules) if modules is not None else None, "modules": modules}


def read_nouveau(r, facts):
    """Whether nouveau is loaded, blacklisted (modprobe.d or the command line) or has modeset disabled."""
    by_modprobe, by_cmdline, files = blacklisted(r, facts, "nouveau")
    return {
        "loaded": facts["modules"]["nouveau"]["loaded"],
        "blacklisted_modprobe": by_modprobe,
        "modeset_disabled": tri_any([option_is(r, "nouveau", "modeset", "0"), _arg_is(facts, "nouveau.modeset", "0")]),
        "blacklisted_cmdline": by_cmdline,
        "blacklist_files": files,
    }


def _arg_is(facts, name, value):
    """Whether kernel argument ``name`` is ``value``; None when the command line was not read."""
    args = facts["cmdline"]["args"]
    return None if args is None else args.get(name) == value


def read_nvidia_driver(r, facts):
    """The loaded NVIDIA driver from /proc/driver/nvidia/version: version, open or proprietary, GCC."""
    text = r.read(NVIDIA_VERSION)
    parsed = parse_nvidia_version(text) if text is not None else None
    if text is None:
        loaded = False if r.absent(NVIDIA_VERSION) else None
    elif parsed is None:
        r.problem(NVIDIA_VERSION, "malformed", text[:80])
        loaded = None
    else:
        loaded = True
    out = {"loaded": loaded, "version": None, "flavor": None, "gcc": None}
    out.update(parsed or {})
    return out
