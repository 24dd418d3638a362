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
import os
import re

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

#: Kernel file systems: when one is not in the host root, nothing below it is known (not even absence).
PSEUDO = ("proc", "sys", "dev")
_ABSENT = (errno.ENOENT, errno.ENOTDIR)
_MAX_LINKS = 16


class Reader(object):
    """File access relative to host_root; records problems instead of raising."""

    def __init__(self, host_root="/"):
        self.root = host_root or "/"
        self.problems = []
        self._absent = set()
        self._mounted = {}
        self._memo = {}

    def path(self, rel):
        return os.path.join(self.root, rel.lstrip("/"))

    def problem(self, rel, reason, detail=None):
        self.problems.append({"source": "/" + rel.lstrip("/"), "reason": reason, "detail": detail})

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
            try:
                self._mounted[top] = bool(os.listdir(self.path(top)))
                reason = "missing"
            except OSError as exc:
                self._mounted[top] = False
                reason = "missing" if exc.errno in _ABSENT else "unreadable"
            if not self._mounted[top]:
                self.problem(top, reason, "/%s is not mounted in the host root; facts read from it are unknown" % top)
        return self._mounted[top]

    def _failed(self, rel, exc, required):
        """Record why ``rel`` could not be opened; an absent file is remembered as absent (see :meth:`absent`)."""
        if getattr(exc, "errno", None) in _ABSENT:
            if self.mounted(rel):
                self._absent.add(rel)
                if required:
                    self.problem(rel, "missing", exc.strerror)
        else:
            self.problem(rel, "unreadable", exc.strerror)

    def absent(self, rel):
        """True when a read, listdir or present of ``rel`` found it definitely absent (not merely unreadable)."""
        return rel in self._absent

    def present(self, rel):
        """True or False whether ``rel`` exists (a dangling link exists); None (a problem) when it cannot be told."""
        if not self.mounted(rel):
            return None
        try:
            os.lstat(self.path(rel))
            return True
        except OSError as exc:
            self._failed(rel, exc, False)
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

    def exists(self, rel):
        """Whether ``rel`` exists; unknown counts as no (for locating files, never for a fact)."""
        return bool(self.present(rel))

    def read(self, rel, required=False, binary=False):
        """Content, or None when absent (a problem only if required), unreadable or, for text, binary (NUL bytes:
        a zeroed or corrupted file; always a problem)."""
        try:
            with open(self.path(rel), "rb") as f:
                data = f.read()
        except (IOError, OSError) as exc:
            self._failed(rel, exc, required)
            return None
        if binary:
            return data
        if b"\0" in data:
            self.problem(rel, "malformed", "binary data (NUL bytes) in a text file")
            return None
        return data.decode("utf-8", "replace")

    def listdir(self, rel):
        """Sorted names; [] when absent, None (a problem) when unreadable."""
        try:
            return sorted(os.listdir(self.path(rel)))
        except (IOError, OSError) as exc:
            self._failed(rel, exc, False)
            return [] if self.absent(rel) else None

    def readlink(self, rel):
        try:
            return os.readlink(self.path(rel))
        except (IOError, OSError):
            return None

    def resolve(self, rel):
        """The root-relative path ``rel`` leads to, following links inside the host root (an absolute target and
        ``..`` stop at the root, as in a chroot); None when a link dangles or loops (then :meth:`absent` is True
        for ``rel``) or the lookup failed (a problem)."""
        start = rel = rel.strip("/")
        for _unused in range(_MAX_LINKS):
            target = self.readlink(rel)
            if target is None:
                state = self.present(rel)
                if state is False:
                    self._absent.add(start)
                return rel if state else None
            rel = os.path.normpath(os.path.join("/", os.path.dirname(rel), target)).lstrip("/")
        self._absent.add(start)
        return None

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
