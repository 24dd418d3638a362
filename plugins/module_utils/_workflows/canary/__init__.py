# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The canary upgrade (module ``gpu_canary_upgrade``).

Pure logic, no API calls: :mod:`.waves` (which nodes, in which waves), :mod:`.record` (the progress record),
:mod:`.taints`, :mod:`.pods`, :mod:`.managed`, :mod:`.gate` and :mod:`.cuda` (what must be fixed first),
:mod:`.progress` (where a wait stands), :mod:`.proof` (is a node upgraded and healthy). Cluster steps over a
:mod:`.session`: :mod:`.plan`, :mod:`.prepare` (and its undoing), :mod:`.wave` (with :mod:`.drain` and
:mod:`.driver`), :mod:`.rollback` and :mod:`.status`; :mod:`.run` binds them as :class:`.run.Canary`, and
:mod:`.steps` runs them for the module.
"""
