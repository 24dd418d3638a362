# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""File access relative to a host root that records problems instead of raising, and the TOML and JSON readers."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

try:
    import tomllib as _toml
except ImportError:  # Python < 3.11 on the target
    try:
        import tomli as _toml
    except ImportError:
        _toml = None


class Reader(object):
    """File access relative to host_root; records problems instead of raising."""

    def __init__(self, host_root="/"):
        self.root = host_root or "/"
        self.problems = []

    def path(self, rel):
        return os.path.join(self.root, rel.lstrip("/"))

    def exists(self, rel):
        return os.path.lexists(self.path(rel))

    def problem(self, rel, reason, detail=None):
        self.problems.append({"source": "/" + rel.lstrip("/"), "reason": reason, "detail": detail})

    def read(self, rel, required=False, binary=False):
        """Content, or None when absent (a problem only if required) or unreadable (always a problem)."""
        try:
            with open(self.path(rel), "rb") as f:
                data = f.read()
        except (IOError, OSError) as exc:
            missing = getattr(exc, "errno", None) == 2
            if required or not missing:
                self.problem(rel, "missing" if missing else "unreadable", str(exc))
            return None
        return data if binary else data.decode("utf-8", "replace")

    def listdir(self, rel):
        try:
            return sorted(os.listdir(self.path(rel)))
        except (IOError, OSError) as exc:
            if getattr(exc, "errno", None) not in (2, 20):
                self.problem(rel, "unreadable", str(exc))
            return []

    def readlink(self, rel):
        try:
            return os.readlink(self.path(rel))
        except (IOError, OSError):
            return None

    def resolves(self, rel):
        """True when rel exists, following symlinks inside the host root."""
        seen = 0
        while seen < 16:
            target = self.readlink(rel)
            if target is None:
                return os.path.exists(self.path(rel))
            rel = target if target.startswith("/") else os.path.normpath(os.path.join(os.path.dirname(rel), target))
            seen += 1
        return False

    def toml(self, rel):
        text = self.read(rel)
        if text is None:
            return None
        if _toml is None:
            self.problem(rel, "toml_parser_unavailable", "needs Python 3.11 tomllib or tomli on the target")
            return None
        try:
            return parse_toml(text)
        except ValueError as exc:
            self.problem(rel, "malformed", str(exc))
            return None

    def json(self, rel):
        text = self.read(rel)
        if text is None:
            return None
        try:
            data = json.loads(text)
        except ValueError as exc:
            self.problem(rel, "malformed", str(exc))
            return None
        if not isinstance(data, dict):
            self.problem(rel, "malformed", "top level is not an object")
            return None
        return data


def parse_toml(text):
    """Parse TOML; raises ValueError (tomllib.TOMLDecodeError is one) on bad input."""
    return _toml.loads(text)


def get_in(d, *keys):
    """``d[k1][k2]...`` of a parsed config; None when a level is missing or not a dict."""
    for k in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(k)
    return d
