# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""Operating system facts: os-release, Secure Boot from efivars, unattended kernel upgrades (apt or dnf)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import configparser
import fnmatch
import hashlib
import re
import shlex
import struct

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.host_facts.reader import (
    parse_assignments,
    tri_any,
)

EFIVARS = "sys/firmware/efi/efivars"
SECURE_BOOT_VAR = EFIVARS + "/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"
#: shim's runtime copy of the Machine Owner Key list.
MOK_LIST_VAR = EFIVARS + "/MokListRT-605dab50-e046-4300-abb6-3dd810dd8b23"
#: EFI_CERT_X509_GUID a5c059a1-94e4-4aa7-87b5-ab155c2bf072, as stored (mixed-endian).
EFI_CERT_X509_GUID = b"\xa1\x59\xc0\xa5\xe4\x94\xa7\x4a\x87\xb5\xab\x15\x5c\x2b\xf0\x72"
#: Present when the kernel checks module signatures (CONFIG_MODULE_SIG).
SIG_ENFORCE = "sys/module/module/parameters/sig_enforce"
APT_CONF_D = "etc/apt/apt.conf.d"
APT_UNATTENDED = "apt::periodic::unattended-upgrade"
APT_BLACKLIST = "unattended-upgrade::package-blacklist"
DNF_AUTOMATIC = "etc/dnf/automatic.conf"
DNF_CONF = "etc/dnf/dnf.conf"
DNF_TIMERS = ("dnf-automatic.timer", "dnf-automatic-install.timer")
KERNEL_PACKAGES = ("kernel", "kernel-core", "kernel-modules")

#: apt.conf tokens: a quoted string, a comment (``/* */``, ``//``, ``#``), punctuation or a bare word.
APT_TOKEN_RE = re.compile(r'"(?P<q>[^"]*)"|/\*.*?\*/|//[^\n]*|#[^\n]*|(?P<p>[{};])|(?P<w>[^\s{};"]+)', re.S)
APT_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]+$")


def _shell_word(value):
    """An os-release value with its shell quoting undone (ValueError when the quoting is broken)."""
    return " ".join(shlex.split(value))


def parse_os_release(text):
    """KEY=value lines with shell quoting (os-release(5)); bad lines are skipped and counted."""
    return parse_assignments(text, value_of=_shell_word, key_pattern=r"[A-Z_][A-Z0-9_]*")


def parse_apt_conf(text):
    """(``{lower-case full key: value or [values]}``, malformed) of apt.conf(5) text.

    Comments (``//``, ``/* */``, ``#``) are dropped; ``A { B "v"; };`` is ``a::b = v``; quoted strings alone in a
    scope are its list. A later value replaces an earlier one, as apt does.
    """
    out, scope, key, bad = {}, [], None, False
    for m in APT_TOKEN_RE.finditer(text):
        quoted, punct, word = m.group("q"), m.group("p"), m.group("w")
        if word is not None and key is None:
            key = word.lower()
        elif word is not None or quoted is not None:
            value = quoted if word is None else word
            if key is None:
                out.setdefault("::".join(scope), []).append(value)
            else:
                out["::".join(scope + [key])] = value
                key = None
        elif punct == "{":
            scope.append(key or "")
            bad = bad or key is None
            key = None
        elif punct == "}":
            bad = bad or not scope
            scope = scope[:-1]
        elif punct == ";":
            key = None
    return out, bad or bool(scope)


def secure_boot(raw):
    """EFI variable content: 4 attribute bytes then one value byte, 0 or 1; None when it is not that."""
    if raw is None or len(raw) != 5 or bytearray(raw)[4] not in (0, 1):
        return None
    return bytearray(raw)[4] == 1


def read_os(r, facts):
    """ID, version, ID_LIKE, pretty name and codename from /etc/os-release (else /usr/lib/os-release)."""
    text = r.read("etc/os-release")
    source = "etc/os-release"
    if text is None and r.absent(source):
        text, source = r.read("usr/lib/os-release", required=True), "usr/lib/os-release"
    data, bad = parse_os_release(text or "")
    if bad:
        r.problem(source, "malformed", "%d line(s) ignored" % bad)
    return {
        "id": data.get("ID"),
        "version_id": data.get("VERSION_ID"),
        "id_like": data.get("ID_LIKE", "").split() if text is not None else None,
        "pretty_name": data.get("PRETTY_NAME"),
        "version_codename": data.get("VERSION_CODENAME"),
    }


def read_precompiled_driver(r, facts):
    """The parts of the precompiled driver image tag the GPU Operator looks for on this node, ``<branch>-<kernel
    release>-<ID><VERSION_ID>`` (the branch is the driver's, not the host's: ``tag_pattern`` keeps it as
    ``<branch>``); None each when the kernel release or os-release is unknown."""
    release, os_ = facts["kernel"]["release"], facts["os"]
    os_tag = "%s%s" % (os_["id"], os_["version_id"]) if os_["id"] and os_["version_id"] else None
    return {
        "kernel": release,
        "os_tag": os_tag,
        "tag_pattern": "<branch>-%s-%s" % (release, os_tag) if release and os_tag else None,
    }


def read_secure_boot(r, facts):
    """Whether the host booted by EFI and whether Secure Boot is enabled (None when unknown: efivarfs not mounted
    in the root is unknown, not off), the SHA-1 fingerprints of the X.509 keys enrolled in the MOK list (as
    ``mokutil --list-enrolled`` prints them) and whether the loaded nvidia module is signed."""
    out = {"efi": None, "enabled": None, "mok_keys": None, "nvidia_module_signed": _nvidia_signed(r, facts)}
    out["efi"] = efi = r.present("sys/firmware/efi")
    if not efi:
        out.update({"enabled": efi, "mok_keys": [] if efi is False else None})
        return out
    if r.present(EFIVARS) is False:
        r.problem(EFIVARS, "missing", "efivarfs is not mounted in the host root; Secure Boot is unknown")
        return out
    raw = r.read(SECURE_BOOT_VAR, binary=True)
    state = secure_boot(raw)
    if raw is None and r.absent(SECURE_BOOT_VAR):
        state = False
    elif raw is not None and state is None:
        r.problem(SECURE_BOOT_VAR, "malformed", "expected 4 attribute bytes and a value byte 0 or 1")
    out.update({"enabled": state, "mok_keys": _mok_keys(r)})
    return out


def _mok_keys(r):
    """SHA-1 fingerprints of the X.509 certificates in MokListRT; [] when shim enrolled none (no variable)."""
    raw = r.read(MOK_LIST_VAR, binary=True)
    if raw is None:
        return [] if r.absent(MOK_LIST_VAR) else None
    keys = efi_x509_certificates(raw[4:])  # 4 attribute bytes, then EFI_SIGNATURE_LISTs
    if keys is None:
        r.problem(MOK_LIST_VAR, "malformed", "not a list of EFI signature lists")
        return None
    return [":".join("%02x" % b for b in bytearray(hashlib.sha1(der).digest())) for der in keys]  # nosec B324


def efi_x509_certificates(data):
    """The DER certificates of the X.509 entries of a run of EFI_SIGNATURE_LIST structures (UEFI 2.x, 32.4.1:
    type GUID, list size, header size, signature size, header, then signatures of an owner GUID and the data);
    None when ``data`` is not such a run."""
    out, pos = [], 0
    while pos < len(data):
        if len(data) - pos < 28:
            return None
        kind = data[pos : pos + 16]
        size, header, sig_size = struct.unpack_from("<III", data, pos + 16)
        if size < 28 + header or pos + size > len(data) or sig_size <= 16 or (size - 28 - header) % sig_size:
            return None
        start = pos + 28 + header
        for at in range(start, pos + size, sig_size):
            if kind == EFI_CERT_X509_GUID:
                out.append(bytes(data[at + 16 : at + sig_size]))
        pos += size
    return out


def _nvidia_signed(r, facts):
    """False when the loaded nvidia module carries the unsigned taint (``E``); True when it is loaded without it
    on a kernel that checks module signatures (``/sys/module/module/parameters/sig_enforce`` exists); None when
    it is not loaded or that cannot be told."""
    nvidia = [m for m in facts["loaded_modules"]["modules"] or [] if m["name"] == "nvidia"]
    if not nvidia:
        return None
    if "E" in nvidia[0]["taints"]:
        return False
    return True if r.present(SIG_ENFORCE) else None


def read_unattended_upgrades(r, facts):
    """The automatic update tool (unattended-upgrades or dnf-automatic), whether it runs and keeps the kernel."""
    names = r.listdir(APT_CONF_D)
    if names is None:
        return {"tool": None, "enabled": None, "kernel_blacklisted": None}
    conf, complete = _apt_conf(r, names)
    if APT_UNATTENDED in conf or "50unattended-upgrades" in names:
        value = conf.get(APT_UNATTENDED)
        blacklist = conf.get(APT_BLACKLIST)
        return {
            "tool": "unattended-upgrades",
            "enabled": (value not in ("0", "")) if isinstance(value, str) else (False if complete else None),
            "kernel_blacklisted": True
            if isinstance(blacklist, list) and any("linux-" in p for p in blacklist)
            else (False if complete else None),
        }
    dnf = r.present(DNF_AUTOMATIC)
    if dnf:
        return _dnf_automatic(r)
    known = complete and dnf is not None
    return {"tool": None, "enabled": False if known else None, "kernel_blacklisted": None}


def _apt_conf(r, names):
    """apt.conf.d merged in file name order (names apt reads: no extension or ``.conf``), and whether all read."""
    conf, complete = {}, True
    for name in names:
        if not APT_NAME_RE.match(name) or ("." in name and not name.endswith(".conf")):
            continue
        rel = "%s/%s" % (APT_CONF_D, name)
        text = r.read(rel)
        if text is None:
            complete = complete and r.absent(rel)
            continue
        parsed, bad = parse_apt_conf(text)
        if bad:
            r.problem(rel, "malformed", "unbalanced braces or a key without a value")
            complete = False
        conf.update(parsed)
    return conf, complete


def _ini(r, rel):
    """configparser of ``rel``: an empty one when absent, None (a problem) when unreadable or malformed."""
    cp = configparser.ConfigParser(interpolation=None, strict=False)
    text = r.read(rel)
    if text is None:
        return cp if r.absent(rel) else None
    try:
        cp.read_string(text, source=rel)
    except configparser.Error as exc:
        r.problem(rel, "malformed", str(exc).splitlines()[0])
        return None
    return cp


def _dnf_automatic(r):
    """dnf-automatic: a timer enabled and ``apply_updates``; the kernel kept by an ``exclude`` in dnf.conf [main]
    or automatic.conf [base]."""
    auto, dnf = _ini(r, DNF_AUTOMATIC), _ini(r, DNF_CONF)
    timer = tri_any(r.present("etc/systemd/system/timers.target.wants/%s" % t) for t in DNF_TIMERS)
    apply = None
    if auto is not None:
        try:
            apply = auto.getboolean("commands", "apply_updates", fallback=False)
        except ValueError as exc:
            r.problem(DNF_AUTOMATIC, "malformed", str(exc))
    enabled = False if False in (timer, apply) else (None if None in (timer, apply) else True)
    excludes = []
    for cp, section in ((dnf, "main"), (auto, "base")):
        if cp is None:
            excludes = None
        elif excludes is not None:
            for key in ("exclude", "excludepkgs"):
                excludes += re.split(r"[\s,]+", cp.get(section, key, fallback=""))
    kernel = None
    if excludes is not None:
        kernel = any(fnmatch.fnmatch(k, p) for p in excludes if p for k in KERNEL_PACKAGES)
    return {"tool": "dnf-automatic", "enabled": enabled, "kernel_blacklisted": kernel}
