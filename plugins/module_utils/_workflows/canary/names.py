# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The names the canary upgrade reads and writes on nodes: its taint, its annotations, the operator's labels."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DEFAULT_TAINT_KEY = "gpuops.io/canary-upgrade"
FAILED_ANNOTATION = "gpuops.io/canary-upgrade-failed"
POOL_LABEL = "gpuops.io/pool"
DRIVER_VERSION_LABEL = "nvidia.com/cuda.driver-version.full"
#: ``nvidia.com/gpu.deploy.<component>``: whether the operator deploys a component on a node (``true``), or not.
DEPLOY_LABEL_PREFIX = "nvidia.com/gpu.deploy."
#: The upgrade controller records a node's cordon state before its first cordon here.
INITIAL_UNSCHEDULABLE_ANNOTATION = "nvidia.com/gpu-driver-upgrade.node-initial-state.unschedulable"

#: Upgrade states in which the operator's upgrade controller is working on a node (it cordons them itself), each with
#: what the node waits for in it (with upgrade-failed, ``_view.quarantine.CONTROLLER_CORDON_STATES``).
IN_PROGRESS_WAITS = {
    "cordon-required": "the upgrade controller to cordon it",
    "wait-for-jobs-required": "its GPU jobs to finish (upgradePolicy.waitForCompletion)",
    "pod-deletion-required": "the upgrade controller to delete its GPU pods",
    "drain-required": "the node to drain",
    "pod-restart-required": "the new driver pod to run and be ready",
    "validation-required": "the operator validator to pass on the new driver",
    "uncordon-required": "the upgrade controller to uncordon it",
}
