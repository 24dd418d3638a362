# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""File access relative to a host root that records problems instead of raising, and the TOML, JSON and YAML
readers.

Tri-state: a file that is absent says "no" only when the file system it lives on is in the host root
(:data:`PSEUDO` file systems are checked once); an unreadable or malformed file is unknown and a problem.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import json
import mmap
import os
import re

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.host_facts.paths import (
    ABSENT as _ABSENT,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.host_facts.paths import (
    Paths,
)

try:
    import tomllib as _toml
except ImportError:  # Python < 3.11 on the target
    try:
        import tomli as _toml
    except ImportError:
        _toml = None

try:
    import yaml as _yaml

    _YAML_LOADER = getattr(_yaml, "CSafeLoader", _yaml.SafeLoader)  # libyaml when PyYAML was built with it
except ImportError:  # PyYAML is not required on the target
    _yaml = None

_NOFOLLOW = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)

#: Kernel file systems: when one is not in the host root, nothing below it is known (not even absence).
PSEUDO = ("proc", "sys", "dev")


class Reader(object):
    """File access relative to host_root, every path resolved inside it (:mod:`paths`); records problems instead
    of raising."""

    def __init__(self, host_root="/"):
        self.root = host_root or "/"
        self.paths = Paths(self.root)
        self.problems = []
        self._noted = set()
        self._absent = set()
        self._mounted = {}
        self._memo = {}

    def problem(self, rel, reason, detail=None):
        """Record a problem of source ``rel`` (once per source, reason and detail)."""
        entry = ("/" + rel.lstrip("/"), reason, detail)
        if entry not in self._noted:
            self._noted.add(entry)
            self.problems.append({"source": entry[0], "reason": reason, "detail": detail})

    def memo(self, key, compute):
        """``compute(self)`` once per collection (a source several facts read)."""
        if key not in self._memo:
            self._memo[key] = compute(self)
        return self._memo[key]

    def mounted(self, rel):
        """False (with one problem) when ``rel`` lies on a :data:`PSEUDO` file system missing from the root."""
        top = rel.lstrip("/").split("/", 1)[0]
        if top not in PSEUDO:
            return True
        if top not in self._mounted:
            walk = self.paths.walk(top)
            reason = "missing" if walk.failure is None or walk.failure[0] != "unreadable" else "unreadable"
            try:
                self._mounted[top] = walk.path is not None and bool(os.listdir(self.paths.host(walk.path)))
            except OSError as exc:
                self._mounted[top] = False
                reason = "missing" if exc.errno in _ABSENT else "unreadable"
            if not self._mounted[top]:
                self.problem(top, reason, "/%s is not mounted in the host root; facts read from it are unknown" % top)
        return self._mounted[top]

    def locate(self, rel, required=False, follow=True):
        """The host path ``rel`` resolves to inside the root (:meth:`Paths.walk`); None when it cannot be reached:
        absent (remembered, see :meth:`absent`; a problem only if ``required``), a link dangling (absent, a
        problem naming the link), a loop or an unreadable directory (unknown, a problem). A link whose ``..``
        climbs above the root is read clamped at the root, with a problem."""
        rel = rel.strip("/")
        walk = self.paths.walk(rel, follow)
        for link, target in walk.outside:
            self.problem(link, "outside_root", "links to %s, above host_root; read as chroot would" % target)
        if walk.failure is None:
            return self.paths.host(walk.path)
        reason, source, detail = walk.failure
        if reason in ("absent", "dangling"):
            if self.mounted(rel):
                self._absent.add(rel)
                if reason == "dangling":
                    self.problem(source, reason, detail)
                elif required:
                    self.problem(rel, "missing", detail)
        elif reason == "unreadable" and (rel == source or rel.startswith(source + "/")):
            self.problem(rel, reason, detail)  # a directory on its own path: name the file that was wanted
        else:
            self.problem(source, reason, detail)  # a link's target (or a loop): name where it stopped
        return None

    def _failed(self, rel, exc, required):
        """Record why the resolved ``rel`` could not be opened (gone since it was resolved, or unreadable)."""
        if getattr(exc, "errno", None) in _ABSENT:
            if self.mounted(rel):
                self._absent.add(rel.strip("/"))
                if required:
                    self.problem(rel, "missing", exc.strerror)
        else:
            self.problem(rel, "unreadable", exc.strerror)

    def absent(self, rel):
        """True when a read, listdir or present of ``rel`` found it definitely absent (not merely unreadable)."""
        return rel.strip("/") in self._absent

    def present(self, rel):
        """True or False whether ``rel`` exists (a dangling link exists); None (a problem) when it cannot be told."""
        if not self.mounted(rel):
            return None
        if self.locate(rel, follow=False) is not None:
            return True
        return False if self.absent(rel) else None

    def first(self, rels):
        """(the first of ``rels`` that exists, True) or (None, False); (None, None) when none was found and one
        could not be looked up."""
        states = []
        for rel in rels:
            state = self.present(rel)
            if state:
                return rel, True
            states.append(state)
        return None, (None if None in states else False)

    def first_resolved(self, rels):
        """The first of ``rels`` that resolves to a file or directory (a dangling link does not); None."""
        return next((rel for rel in rels if self.resolves(rel)), None)

    def exists(self, rel):
        """Whether ``rel`` exists; unknown counts as no (for locating files, never for a fact)."""
        return bool(self.present(rel))

    def read(self, rel, required=False, binary=False):
        """Content, or None when absent (a problem only if required), unreadable or, for text, binary (NUL bytes:
        a zeroed or corrupted file; always a problem)."""
        data = self._content(rel.strip("/"), required)
        if data is None or binary:
            return data
        if b"\0" in data:
            self.problem(rel, "malformed", "binary data (NUL bytes) in a text file")
            return None
        return data.decode("utf-8", "replace")

    def _content(self, rel, required):
        """The bytes of file ``rel``. Its directory is resolved (once per collection) and the file opened with
        ``O_NOFOLLOW``: a plain file costs one ``open``; a link (ELOOP), an absent file or a directory that did
        not resolve cleanly takes the full walk of :meth:`locate`, which records why."""
        parent, _sep, name = rel.rpartition("/")
        base = self.paths.walk(parent) if parent else None
        fd = None
        if base is None or base.path is not None and not base.outside:
            try:
                fd = os.open(self.paths.host((base.path + "/" if base and base.path else "") + name), _NOFOLLOW)
            except OSError as exc:
                if exc.errno not in _ABSENT + (errno.ELOOP,):
                    self._failed(rel, exc, required)
                    return None
        if fd is None:
            path = self.locate(rel, required)
            if path is None:
                return None
            try:
                fd = os.open(path, _NOFOLLOW)
            except OSError as exc:
                self._failed(rel, exc, required)
                return None
        try:
            with os.fdopen(fd, "rb") as f:
                return f.read()
        except (IOError, OSError) as exc:  # a directory: EISDIR
            self._failed(rel, exc, required)
            return None

    def scan(self, rel, marker, length):
        """``length`` bytes of file ``rel`` from the first ``marker`` in it (memory-mapped: a large binary is not
        read whole); None when absent, unreadable (a problem) or without the marker."""
        path = self.locate(rel)
        if path is None:
            return None
        try:
            with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
                at = data.find(marker)
                return data[at : at + length] if at >= 0 else None
        except ValueError:  # an empty file cannot be mapped: no marker in it
            return None
        except (IOError, OSError) as exc:
            self._failed(rel, exc, False)
            return None

    def listdir(self, rel):
        """Sorted names; [] when absent, None (a problem) when unreadable."""
        path = self.locate(rel)
        if path is None:
            return [] if self.absent(rel) else None
        try:
            return sorted(os.listdir(path))
        except (IOError, OSError) as exc:
            self._failed(rel, exc, False)
            return [] if self.absent(rel) else None

    def readlink(self, rel):
        """The target of link ``rel`` as written (None when ``rel`` is not a link or cannot be reached)."""
        walk = self.paths.walk(rel.strip("/"), follow=False)
        if walk.path is None:
            return None
        kind, target = self.paths.kind(walk.path)
        return target if kind == "link" else None

    def resolve(self, rel):
        """The root-relative path ``rel`` leads to, following links inside the host root (an absolute target and
        ``..`` stop at the root, as in a chroot); None when a link dangles (then :meth:`absent` is True for
        ``rel``), loops or the lookup failed (a problem)."""
        if self.locate(rel) is None:
            return None
        return self.paths.walk(rel.strip("/")).path

    def resolves(self, rel):
        """True when ``rel`` exists once links inside the host root are followed."""
        return self.resolve(rel) is not None

    def toml(self, rel, required=False):
        """Parsed TOML of ``rel``; None (a problem unless absent and not required) otherwise."""
        return self.parse_toml(rel, self.read(rel, required))

    def parse_toml(self, rel, text):
        """Parsed TOML of ``text`` read from ``rel``; None (a problem) when it is not TOML."""
        missing = None if _toml else ("toml_parser_unavailable", "needs Python 3.11 tomllib or tomli on the target")
        return self._parsed(rel, text, _toml and _toml.loads, ValueError, missing)  # TOMLDecodeError is a ValueError

    def json(self, rel):
        """Parsed JSON object of ``rel``; None (a problem unless absent) otherwise."""
        return self._object(rel, self._parsed(rel, self.read(rel), json.loads, ValueError))

    def yaml(self, rel):
        """Parsed YAML mapping of ``rel`` (an empty file is an empty one); None (a problem unless absent) otherwise."""
        missing = None if _yaml else ("yaml_parser_unavailable", "needs PyYAML on the target")
        return self._object(rel, self._parsed(rel, self.read(rel), _load_yaml, _yaml and _yaml.YAMLError, missing))

    def _parsed(self, rel, text, loads, errors, missing=None):
        """``loads(text)``; None when there is no text, no parser (``missing``: its problem) or a parse error."""
        if text is None:
            return None
        if missing:
            self.problem(rel, *missing)
            return None
        try:
            return loads(text)
        except errors as exc:
            self.problem(rel, "malformed", str(exc)[:200])
            return None

    def _object(self, rel, data):
        if data is not None and not isinstance(data, dict):
            self.problem(rel, "malformed", "top level is not a mapping")
            return None
        return data


def _load_yaml(text):
    data = _yaml.load(text, Loader=_YAML_LOADER)  # nosec B506: a safe loader, C or Python
    return {} if data is None else data


def tri_any(values):
    """True when any value is True, else None when any is unknown (None), else False."""
    values = list(values)
    if True in values:
        return True
    return None if None in values else False


def parse_assignments(text, value_of=str.strip, key_pattern=r".+"):
    """(``{KEY: value_of(value)}``, count of bad lines) of a file of ``KEY=value`` lines. Blank lines and ``#``
    comments are skipped; a line without ``=``, with a key that does not match ``key_pattern``, or whose value
    ``value_of`` rejects (ValueError) is bad."""
    out, bad = {}, 0
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        try:
            if not sep or not re.fullmatch(key_pattern, key):
                raise ValueError(line)
            out[key] = value_of(value)
        except ValueError:
            bad += 1
    return out, bad
