# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The upgrade check: a node is proven by its own driver upgrade state and the driver it runs, never by the
ClusterPolicy's state (which on operator 26.3 and older reports ready while nodes are mid-upgrade)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.upgrade_status import (
    FAILED_STATE,
    upgrading,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.cluster_view import UPGRADE_STATE_LABEL
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.registry import finding


def check_upgrade(node, expected_driver=None):
    """Findings at the driver layer for a node whose driver upgrade failed or is mid-way, or that runs another driver
    than ``expected_driver`` (the version or, for precompiled drivers, the branch the operator is set to for it; None:
    not managed or not known) with no upgrade under way. A node held by the upgrade skip label is held on purpose and
    passes."""
    name, state = node.get("name"), node.get("upgrade_state")
    if node.get("upgrade_skip"):
        return []
    if state == FAILED_STATE:
        return [
            finding(
                "upgrade",
                "driver",
                "the operator's upgrade controller set %s=upgrade-failed" % UPGRADE_STATE_LABEL,
                "Read the events and the logs of the driver pod on %s; once fixed, retry with: kubectl label node %s "
                "%s=upgrade-required --overwrite" % (name, name, UPGRADE_STATE_LABEL),
            )
        ]
    if upgrading(state):
        return [
            finding(
                "upgrade",
                "driver",
                "the driver upgrade is under way (%s=%s): the node is not proven until it is upgrade-done"
                % (UPGRADE_STATE_LABEL, state),
                "Wait for the upgrade controller (gpuops.gpu_operator.gpu_canary_upgrade step=status shows where it "
                "stands) and validate again.",
            )
        ]
    running = (node.get("gpu") or {}).get("driver_version")
    if expected_driver and running and running != expected_driver and not running.startswith(expected_driver + "."):
        return [
            finding(
                "upgrade",
                "driver",
                "the node runs driver %s, the operator is set to %s, and no upgrade is under way"
                % (running, expected_driver),
                "Check driver.upgradePolicy.autoUpgrade and the driver DaemonSet's rollout; to upgrade this node: "
                "kubectl label node %s %s=upgrade-required --overwrite" % (name, UPGRADE_STATE_LABEL),
            )
        ]
    return []
