# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""Floor 2, the cluster view: what the cluster's raw objects say about its GPU nodes (nodes, operand pods, DRA
slices, classes and claims, CEL selectors, foreign quarantine), and the few paginated LISTs it is read from.

Imports _core and _clients only."""
