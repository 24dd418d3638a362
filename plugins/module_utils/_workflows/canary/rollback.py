# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The rollback step: the driver back at the record's source version, and every planned node released to it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.cluster_view import (
    UPGRADE_SKIP_LABEL,
    UPGRADE_STATE_LABEL,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import (
    annotations_of,
    labels_of,
    name_of,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.driver import (
    set_driver_version,
    wait_upgraded,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.errors import PlanError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.names import (
    FAILED_ANNOTATION,
    INITIAL_UNSCHEDULABLE_ANNOTATION,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.record import wave_nodes
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.session import node_path


def _release(session, node):
    """Clear the node's failure: the annotation, and an upgrade-failed state relabelled upgrade-required."""
    n = name_of(node)
    if FAILED_ANNOTATION in annotations_of(node):
        session.annotate_node(node, {FAILED_ANNOTATION: None}, "clear the failure (rollback)")
    if labels_of(node).get(UPGRADE_STATE_LABEL) != "upgrade-failed":
        return
    session.label_node(node, {UPGRADE_STATE_LABEL: "upgrade-required"}, "retry towards the old driver")
    # the controller cordoned it for the failed upgrade; with the old driver still in place it may not walk the
    # states again, so restore the cordon state it recorded before its first cordon
    initial = annotations_of(node).get(INITIAL_UNSCHEDULABLE_ANNOTATION)
    if initial == "false" and (node.get("spec") or {}).get("unschedulable"):
        session.write(
            "node %s: uncordon (schedulable before the failed upgrade)" % n,
            "PATCH",
            node_path(n),
            {"spec": {"unschedulable": None}},
        )


def rollback(session, record, nodes, cp, timeout):
    """Point the driver back at the record's source version and let every node that moved come back.

    Clears the failure annotations and canary taints, relabels upgrade-failed nodes upgrade-required, removes the
    skip labels this run set, and waits up to ``timeout`` seconds for every planned node to run the source version.
    Returns the nodes that did not (``{node: why}``)."""
    source = (record.get("from") or {}).get("driver_version")
    if not source:
        raise PlanError("the progress record has no source driver version to roll back to")
    set_driver_version(session, cp, source, {})
    by_name = {name_of(n): n for n in nodes}
    planned = [n for n in wave_nodes(record) if n in by_name]
    for n in planned:
        _release(session, by_name[n])
    for n in record.get("skip_labelled") or []:
        if n in by_name:
            session.label_node(by_name[n], {UPGRADE_SKIP_LABEL: None}, "rollback (remove skip label)")
    for n in planned:
        session.untaint(by_name[n])
    record["skip_labelled"] = []
    record["phase"] = "rolled-back"
    session.save_record(record)
    if session.check_mode or not timeout:
        return {}
    failed, _status = wait_upgraded(session, planned, source, timeout)
    return failed
