# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""Operating system facts: os-release, Secure Boot from efivars, unattended kernel upgrades."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
import shlex

SECURE_BOOT_VAR = "sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"


def parse_os_release(text):
    """KEY=value lines with shell quoting (os-release(5)); bad lines are skipped and counted."""
    out, bad = {}, 0
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep or not re.match(r"^[A-Z_][A-Z0-9_]*$", key):
            bad += 1
            continue
        try:
            parts = shlex.split(value)
        except ValueError:
            bad += 1
            continue
        out[key] = " ".join(parts) if parts else ""
    return out, bad


def secure_boot(raw):
    """EFI variable content: 4 attribute bytes then one value byte."""
    if raw is None or len(raw) < 5:
        return None
    return bytearray(raw)[4] == 1


def read_os(r, facts):
    """ID, version, ID_LIKE, pretty name and codename from /etc/os-release (else /usr/lib/os-release)."""
    text = r.read("etc/os-release")
    source = "etc/os-release"
    if text is None:
        text, source = r.read("usr/lib/os-release", required=True), "usr/lib/os-release"
    data, bad = parse_os_release(text or "")
    if bad:
        r.problem(source, "malformed", "%d line(s) ignored" % bad)
    return {
        "id": data.get("ID"),
        "version_id": data.get("VERSION_ID"),
        "id_like": data.get("ID_LIKE", "").split(),
        "pretty_name": data.get("PRETTY_NAME"),
        "version_codename": data.get("VERSION_CODENAME"),
    }


def read_secure_boot(r, facts):
    """Whether the host booted by EFI and whether Secure Boot is enabled."""
    efi = r.exists("sys/firmware/efi")
    raw = r.read(SECURE_BOOT_VAR, binary=True) if efi else None
    state = secure_boot(raw)
    if raw is not None and state is None:
        r.problem(SECURE_BOOT_VAR, "malformed", "expected at least 5 bytes")
    return {"efi": efi, "enabled": state if efi else False}


def read_unattended_upgrades(r, facts):
    """The automatic update tool (unattended-upgrades or dnf-automatic), whether it runs and keeps the kernel."""
    text = r.read("etc/apt/apt.conf.d/20auto-upgrades")
    if text is not None:
        m = re.search(r'APT::Periodic::Unattended-Upgrade\s+"(\d+)"', text)
        blk = r.read("etc/apt/apt.conf.d/50unattended-upgrades") or ""
        return {
            "tool": "unattended-upgrades",
            "enabled": bool(m and m.group(1) != "0"),
            "kernel_blacklisted": bool(
                re.search(r'"linux-', blk.split("Package-Blacklist", 1)[-1] if "Package-Blacklist" in blk else "")
            ),
        }
    if r.exists("etc/dnf/automatic.conf"):
        timer = any(
            r.exists("etc/systemd/system/timers.target.wants/%s" % t)
            for t in ("dnf-automatic.timer", "dnf-automatic-install.timer")
        )
        text = r.read("etc/dnf/automatic.conf") or ""
        apply = re.search(r"^\s*apply_updates\s*=\s*(yes|true|1)\s*$", text, re.M | re.I) is not None
        return {"tool": "dnf-automatic", "enabled": timer and apply, "kernel_blacklisted": None}
    return {"tool": None, "enabled": False, "kernel_blacklisted": None}
