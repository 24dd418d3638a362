# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change incompatibly at any
# time, including in a patch release. Do not use it elsewhere.

"""What a baseline check is and what it answers.

Every check has an ``id``, a ``scope`` (``host`` or ``cluster``), a default ``severity`` (``fail``, ``warn`` or
``info``), a ``title`` and a function that returns an :class:`Outcome`: ``pass``, ``fail`` (a finding, with
evidence and a concrete fix), ``not_applicable`` (with the reason) or :func:`unknown` (a finding of severity
``warn`` at most: a host fact it needs could not be read, so it is neither a pass nor a fail; :func:`unread` for a
cluster fact or a setting whose value cannot be told). Host checks are
called with one host's facts and the options; cluster checks with ``gpu_preflight_info``'s result, every host and
the options.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.errors import GpuOpsError

SEVERITIES = ("fail", "warn", "info")
PASS, FAIL, NA, SKIPPED = "pass", "fail", "not_applicable", "skipped"


class BaselineError(GpuOpsError, ValueError):
    """Bad options (unknown check id, bad severity...): the message names the input and the fix."""


class Outcome(object):
    """A check's answer; ``subjects`` are the inventory hosts or node names a cluster finding is about."""

    __slots__ = ("status", "evidence", "fix", "subjects", "at_most")

    def __init__(self, status, evidence, fix=None, subjects=None, at_most=None):
        self.status, self.evidence, self.fix, self.subjects = status, evidence, fix, list(subjects or [])
        self.at_most = at_most  # the highest severity this outcome may have, whatever the check's


def ok(evidence):
    """A passed check."""
    return Outcome(PASS, evidence)


def bad(evidence, fix, subjects=None):
    """A finding: what is wrong, how to fix it and, for a cluster check, the hosts or nodes it is about."""
    return Outcome(FAIL, evidence, fix, subjects)


def na(reason):
    """A check that does not apply, with the reason."""
    return Outcome(NA, reason)


def unknown(ctx, what, *sources):
    """A ``warn`` finding (at most) for a host whose fact ``what`` is unknown, naming the gpu_host problems of
    ``sources`` (a problem counts when its source is one of them, below one, or a directory above one)."""
    problems = ((ctx.get("gpu_host") or {}).get("problems")) or []
    named = [
        "%s (%s)" % (p.get("source"), p.get("reason"))
        for p in problems
        if any(_related(str(p.get("source")), s) for s in sources)
    ]
    return Outcome(
        FAIL,
        "unknown: %s; could not read %s" % (what, ", ".join(named) or ", ".join(sources)),
        "Make %s readable under host_root (see gpu_host.problems) and gather the host facts again."
        % ", ".join(sources),
        at_most="warn",
    )


def _related(source, path):
    return source == path or source.startswith(path.rstrip("/") + "/") or path.startswith(source.rstrip("/") + "/")


def unread(what, fix):
    """A ``warn`` finding (at most) for a cluster fact or setting the check cannot tell: ``what`` is unknown, which
    is neither a pass nor a fail."""
    return Outcome(FAIL, "unknown: %s" % what, fix, at_most="warn")


@dataclass(frozen=True)
class Check:
    """A built-in check: its id, scope, default severity, title and function; ``layer`` (one of
    ``_core.layers.LAYERS``) when the check names the layer it guards, ``modes`` (install modes, ``gpucluster``...)
    when it applies to those only (None: to every mode)."""

    id: str
    scope: str
    severity: str
    title: str
    fn: Callable
    layer: Optional[str] = None
    modes: Optional[Sequence[str]] = None

    def applies(self, operator_mode):
        """Whether the check runs for ``operator_mode`` (None: the chart's default, ``clusterpolicy``)."""
        return self.modes is None or (operator_mode or "clusterpolicy") in self.modes


def check(check_id, scope, severity, title, layer=None, modes=None):
    """Decorator: the function it wraps becomes a :class:`Check` (the registry collects them by module)."""

    def make(fn):
        return Check(check_id, scope, severity, title, fn, layer, modes)

    return make
