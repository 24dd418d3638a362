# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The container runtime's version from the host's files: the package database (dpkg's status file), else the Go
build information every Go binary carries (``go version -m`` reads the same): the version the release build set
with ``-ldflags -X .../version.Version=``, else the containerd module's version (k3s and RKE2 embed containerd as
a dependency, replaced by their fork)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

DPKG_STATUS = "var/lib/dpkg/status"
#: runtime -> (dpkg packages, binaries in search order; a distribution's own first).
RUNTIMES = {
    "containerd": (
        ("containerd.io", "containerd"),
        (
            "var/lib/rancher/rke2/bin/containerd",
            "var/lib/rancher/k3s/data/current/bin/containerd",
            "var/lib/k0s/bin/containerd",
            "snap/microk8s/current/bin/containerd",
            "usr/local/bin/containerd",
            "usr/bin/containerd",
        ),
    ),
    "cri-o": (("cri-o",), ("usr/local/bin/crio", "usr/bin/crio")),
}
GO_BUILDINFO = b"\xff Go buildinf:"
#: The Go module paths a runtime's version may be read from.
MODULES = {"containerd": ("github.com/containerd/containerd",), "cri-o": ("github.com/cri-o/cri-o",)}
LDFLAGS_VERSION_RE = re.compile(r"-X[ =]\S*?/(?:containerd|cri-o)\S*?/version\.Version=v?([0-9][^\s'\"]*)")
DPKG_VERSION_RE = re.compile(r"^(?:\d+:)?(?P<upstream>[0-9][0-9A-Za-z.+~]*?)(?:[~+](?:ds|dfsg)\d*)?(?:-[^-]+)?$")


def runtime_version(r, name, distro):
    """``{version, source}`` of runtime ``name``: the binary of ``distro`` when it has its own, else the package
    database, else the system binary; both None when none says (not a problem: many hosts keep neither)."""
    packages, binaries = RUNTIMES.get(name, ((), ()))
    own = [b for b in binaries if distro and distro in b]
    for rel in own:
        found = _binary_version(r, rel, name)
        if found:
            return found
    installed = r.memo("dpkg", dpkg_versions)
    for package in packages:
        if package in installed:
            return {"version": installed[package], "source": "/%s (%s)" % (DPKG_STATUS, package)}
    for rel in binaries:
        if rel not in own and r.resolves(rel):
            found = _binary_version(r, rel, name)
            if found:
                return found
    return {"version": None, "source": None}


def dpkg_versions(r):
    """``{package: upstream version}`` of the installed packages in dpkg's status file."""
    text = r.read(DPKG_STATUS)
    out = {}
    for stanza in (text or "").split("\n\n"):
        fields = dict(line.split(": ", 1) for line in stanza.splitlines() if ": " in line and not line.startswith(" "))
        if fields.get("Package") and "installed" in fields.get("Status", "").split():
            m = DPKG_VERSION_RE.match(fields.get("Version", ""))
            if m:
                out[fields["Package"]] = m.group("upstream")
    return out


def _binary_version(r, rel, name):
    """``{version, source}`` from the Go build information of binary ``rel``; None (a problem when the binary
    is there but says no version) otherwise."""
    info = r.scan(rel, GO_BUILDINFO, 64 * 1024)
    version = go_runtime_version(info, name) if info else None
    if version is None and r.resolves(rel) and not r.absent(rel):
        r.problem(rel, "malformed", "no Go build information naming the %s version" % name)
    return {"version": version, "source": "/" + rel} if version else None


def version_sources(name):
    """The files the version of runtime ``name`` is read from, as problem sources name them."""
    return ["/" + DPKG_STATUS] + ["/" + b for b in RUNTIMES.get(name, ((), ()))[1]]


def go_modinfo(blob):
    """The module information text of a Go (1.18+) build information blob that starts at its magic: a 32-byte
    header, then the Go version and the module text as varint-length strings, the text between 16-byte
    sentinels; None when the blob has another layout."""
    if len(blob) < 32 or not bytearray(blob)[15] & 2:
        return None
    pos, strings = 32, []
    for _unused in range(2):
        length, shift = 0, 0
        while pos < len(blob):
            byte = bytearray(blob)[pos]
            pos += 1
            length |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        strings.append(blob[pos : pos + length])
        pos += length
    info = strings[1]
    return info[16:-16].decode("utf-8", "replace") if len(info) > 32 else None


def go_runtime_version(blob, name):
    """The version of runtime ``name`` in a Go build information blob: the ``-X .../version.Version=`` of the
    build flags, else its module's version (a replacement ``=>`` line wins); None when it says neither."""
    text = go_modinfo(blob)
    if text is None:
        return None
    m = LDFLAGS_VERSION_RE.search(text)
    if m:
        return m.group(1)
    lines = text.splitlines()
    for i, line in enumerate(lines):
        parts = line.split("\t")
        if parts[0] in ("mod", "dep") and len(parts) >= 3 and re.sub(r"/v\d+$", "", parts[1]) in MODULES[name]:
            following = lines[i + 1].split("\t") if i + 1 < len(lines) else []
            version = following[2] if following[:1] == ["=>"] and len(following) >= 3 else parts[2]
            if version != "(devel)":
                return version.lstrip("v")
    return None
