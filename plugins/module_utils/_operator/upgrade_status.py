# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""What the operator's status means while drivers upgrade, by the release that runs.

From GPU Operator 26.7.0 the ClusterPolicy stays ``notReady`` while any node is mid-upgrade, so its state covers the
driver upgrade. On 26.3 and older it can report ``ready`` early: there a ready ClusterPolicy proves nothing during
an upgrade, and only each node's upgrade state (``nvidia.com/gpu-driver-upgrade-state``) and the driver it runs do.
The release is read from the ClusterPolicy's chart labels, else from the operator pod's image tag; an unknown
release is treated as an older one (its status is not taken as proof).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.operator_names import is_operator_pod
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import is_true, labels_of, name_of
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.compat import version_tuple
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.cluster_view import (
    UPGRADE_SKIP_LABEL,
    UPGRADE_STATE_LABEL,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.quarantine import (
    CONTROLLER_CORDON_STATES,
)

#: The first release whose ClusterPolicy stays notReady while a node is mid-upgrade.
STATUS_COVERS_UPGRADES_FROM = (26, 7, 0)
#: Upgrade states in which a node's driver upgrade is queued or under way (upgrade-failed is an outcome).
IN_FLIGHT_STATES = frozenset(("upgrade-required",)) | (CONTROLLER_CORDON_STATES - {"upgrade-failed"})
FAILED_STATE = "upgrade-failed"


def image_tag(image):
    """The tag of an image reference (``repo/driver:595.91.07-ubuntu22.04@sha256:...`` -> ``595.91.07-ubuntu22.04``)."""
    ref = str(image or "").split("@", 1)[0]
    last = ref.rsplit("/", 1)[-1]
    return last.split(":", 1)[1] if ":" in last else ""


def _release_text(text):
    """``"v26.7.0"``/``"gpu-operator-v26.7.0"`` -> ``"26.7.0"``; None when ``text`` names no version."""
    m = re.search(r"v?(\d+\.\d+\.\d+)$", str(text or ""))
    return m.group(1) if m else None


def running_release(cluster_policy, pods=()):
    """``(release, where it was read)`` of the operator that runs: the ClusterPolicy's ``app.kubernetes.io/version``
    or ``helm.sh/chart`` label (set by the chart), else the image tag of the operator's own pod among ``pods``;
    ``(None, None)`` when neither says."""
    labels = labels_of(cluster_policy or {})
    for key in ("app.kubernetes.io/version", "helm.sh/chart"):
        release = _release_text(labels.get(key))
        if release:
            return release, "the ClusterPolicy's %s label" % key
    for pod in pods:
        if is_operator_pod(pod):
            containers = (pod.get("spec") or {}).get("containers") or [{}]
            release = _release_text(image_tag(containers[0].get("image")))
            if release:
                return release, "the image of pod %s" % name_of(pod)
    return None, None


def status_covers_upgrades(release):
    """Whether ``release``'s ClusterPolicy state covers driver upgrades (26.7.0+); False when unknown."""
    version = version_tuple(release)
    return bool(version) and version >= STATUS_COVERS_UPGRADES_FROM


def upgrading(state, held=False):
    """Whether a node in upgrade ``state`` is mid-upgrade (queued or under way); a node ``held`` by the upgrade skip
    label is not, whatever its label says."""
    return not held and state in IN_FLIGHT_STATES


def nodes_in_flight(nodes):
    """``{node: upgrade state}`` of the Node objects ``nodes`` that are mid-upgrade."""
    states = ((name_of(n), labels_of(n)) for n in nodes or [])
    return {
        name: labels[UPGRADE_STATE_LABEL]
        for name, labels in states
        if upgrading(labels.get(UPGRADE_STATE_LABEL), is_true(labels.get(UPGRADE_SKIP_LABEL)))
    }


def policy_status(policy, release, in_flight):
    """How to read the ClusterPolicy ``policy`` (gpu_cluster_info's summary, or None; a GPUCluster's summary says
    ``kind: GPUCluster``) while the nodes ``in_flight`` (``{node: upgrade state}``) upgrade: ``{kind, name, state,
    release, status_covers_upgrades, upgrading, meaning, text}``; ``meaning`` is ``ready``, ``not-ready``,
    ``upgrading`` (26.7+: notReady because nodes upgrade, not a failure) or ``not-proven`` (an older or unknown
    release: its state says nothing about the upgrade)."""
    policy = policy or {}
    name, state = policy.get("name"), policy.get("state")
    kind = (policy.get("kind") or "ClusterPolicy") if name else None
    named = "%s %s" % (kind, name) if name else "no ClusterPolicy or GPUCluster"
    covers = status_covers_upgrades(release)
    nodes = ", ".join("%s (%s)" % item for item in sorted(in_flight.items())[:5])
    more = " and %d more" % (len(in_flight) - 5) if len(in_flight) > 5 else ""
    shown = "operator %s" % release if release else "an operator of unknown release"
    if not in_flight:
        meaning = "ready" if state == "ready" else "not-ready"
        if not name:
            text = "%s found; no node is mid-upgrade" % named
        else:
            text = "%s %s; no node is mid-upgrade" % (named, "is %s" % state if state else "has no state")
    elif covers:
        meaning = "upgrading"
        text = (
            "%s keeps %s notReady while nodes upgrade (%d mid-upgrade: %s%s); state %s is not a "
            "failure, wait for the upgrades" % (shown, named, len(in_flight), nodes, more, state)
        )
    else:
        meaning = "not-proven"
        text = (
            "%s says %s, but on %s that state does not cover driver upgrades: %d node(s) mid-upgrade "
            "(%s%s), judged by their upgrade state and driver version instead"
            % (named, state, shown, len(in_flight), nodes, more)
        )
    return {
        "kind": kind,
        "name": name,
        "state": state,
        "release": release,
        "status_covers_upgrades": covers,
        "upgrading": sorted(in_flight),
        "meaning": meaning,
        "text": text,
    }


def expected_driver(node_labels, policy, nvidia_drivers):
    """The driver version the operator is meant to run on a node (``node_labels``): the ClusterPolicy's
    ``driver.version`` (gpu_cluster_info's summary), or in NVIDIADriver mode that of the NVIDIADriver whose node
    selector matches (the default one when none does); None when the operator does not manage the driver here."""
    driver = (policy or {}).get("driver") or {}
    if driver.get("enabled") is False:
        return None
    if not driver.get("use_nvidia_driver_crd"):
        return driver.get("version")
    matching = [
        d
        for d in nvidia_drivers or []
        if d.get("node_selector") and all(node_labels.get(k) == v for k, v in d["node_selector"].items())
    ]
    chosen = matching or [d for d in nvidia_drivers or [] if d.get("default")]
    return chosen[0].get("version") if len(chosen) == 1 else None
