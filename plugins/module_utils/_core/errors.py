# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The collection's one exception base and the one way a module turns it into ``fail_json``.

Every failure a module reports on purpose is a :class:`GpuOpsError` (or a subclass that names its area:
``K8sError``, ``HelmError``, ``ReleaseError``, ...). Its message says what went wrong, which input caused it and
how to fix it; ``status`` is the HTTP status where there was one; ``details`` holds extra result keys that are
safe to return (never a secret).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class GpuOpsError(Exception):
    """A failure with a message that names the bad input and the fix.

    ``status``: the HTTP status of the response that caused it (0 when no response came back, ``None`` when no
    HTTP call was involved). ``details``: a dict of result keys that are safe to return from a module.
    """

    def __init__(self, msg, status=None, details=None):
        super().__init__(msg)
        self.msg = msg
        self.status = status
        self.details = dict(details or {})

    def result(self):
        """The keyword arguments for ``fail_json``: ``msg``, ``status`` where known, then the details."""
        out = dict(self.details)
        out["msg"] = self.msg
        if self.status is not None:
            out["status"] = self.status
        return out


def fail_from_exception(module, exc):
    """Fail ``module`` from ``exc``: a :class:`GpuOpsError` with its own message and details; anything else as an
    internal error whose message says so (its traceback goes to ``exception``, shown by ``-vvv`` only)."""
    if isinstance(exc, GpuOpsError):
        module.fail_json(**exc.result())
    import traceback

    module.fail_json(
        msg="internal error in gpuops.gpu_operator (%s: %s); this is a bug: please report it with the output of "
        "the task run with -vvv" % (type(exc).__name__, exc),
        exception="".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
    )


class ArgumentError(GpuOpsError):
    """An option value the argument spec cannot reject by itself (a range, a combination of values)."""
