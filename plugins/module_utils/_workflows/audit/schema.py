# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The snapshot's identity (kind and schema version) and the statuses of its rows."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

#: 1.1 added the DRA view: rows' ``node.mode`` and ``node.dra``, GPUs' ``dra_published``/``dra_devices``, the
#: ``dra_*`` mismatch kinds, ``summary.dra_nodes`` and clusters' ``dra_problems``. 1.2 added rows' ``judgement``.
SCHEMA_VERSION = "1.2"
#: The schema version that added the DRA view (a baseline older than it has no DRA values to compare).
DRA_SINCE = "1.1"
SNAPSHOT_KIND = "gpuops.gpu_operator/audit-snapshot"

#: Host row statuses.
STATUS_OK = "ok"
STATUS_UNREACHABLE = "unreachable"
STATUS_FAILED = "failed"
STATUS_NOT_AUDITED = "not_audited"  # in the inventory, but its fact tasks never ran (e.g. --limit)
STATUS_NOT_IN_INVENTORY = "not_in_inventory"  # a GPU node of the cluster with no inventory host

#: Every row status, in summary order.
STATUSES = (STATUS_OK, STATUS_UNREACHABLE, STATUS_FAILED, STATUS_NOT_AUDITED, STATUS_NOT_IN_INVENTORY)
