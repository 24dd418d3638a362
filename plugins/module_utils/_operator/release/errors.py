# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The failure of the release life cycle."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.errors import GpuOpsError


class ReleaseError(GpuOpsError):
    """A refusal or failure; ``msg`` names the input and the fix, ``details`` go into the module result."""

    def __init__(self, msg, **details):
        super().__init__(msg, details=details)
