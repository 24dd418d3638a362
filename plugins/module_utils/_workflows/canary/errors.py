# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The canary upgrade's two failures: an input that cannot be planned, and a wave (or rollback) that failed."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.errors import GpuOpsError


class PlanError(GpuOpsError, ValueError):
    """An input that cannot be planned (message names the input and the fix)."""


class CanaryAbort(GpuOpsError):
    """A wave (or a rollback) failed; the cluster is left as the abort leaves it. ``wave``: the wave's index;
    ``failed``: node name to why it failed. Both are result keys (``wave``, ``failed_nodes``)."""

    def __init__(self, msg, wave=None, failed=None):
        self.wave = wave
        self.failed = dict(failed or {})
        super().__init__(msg, details={"failed_nodes": self.failed, "wave": wave})


def failures_text(failed):
    """``{node: why}`` as one sentence part: ``node a: why; node b: why`` (nodes in name order)."""
    return "; ".join("node %s: %s" % (name, why) for name, why in sorted(failed.items()))
