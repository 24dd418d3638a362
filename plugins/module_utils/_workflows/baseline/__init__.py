# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""Host and cluster baseline checks.

``model`` (what a check is), ``facts`` (what several checks read), the checks (``host_checks``,
``driver_checks``, ``node_checks``, ``cluster_checks``, ``drift``, and ``dra_checks``: GPUCluster mode's DRA
prerequisites), ``registry`` (every check by id and the options), ``evaluate`` (running them) and ``report`` (the
joined report and its Markdown).
"""
