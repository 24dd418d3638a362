# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The driver version, used by prepare, the waves and the rollback: point the ClusterPolicy (or every NVIDIADriver)
at a version, and wait for nodes to run it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from urllib.parse import quote

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import name_of
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.proof import node_upgrade_status
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.session import (
    cluster_policy_path,
)


def _settings(patch, prefix=""):
    """A patch as ``key=value`` words, nested keys dotted: ``upgradePolicy.autoUpgrade=true``, ``version=610.1``."""
    words = []
    for key, value in sorted(patch.items()):
        if isinstance(value, dict):
            words.extend(_settings(value, prefix + key + "."))
        else:
            words.append("%s%s=%s" % (prefix, key, str(value).lower() if isinstance(value, bool) else value))
    return words


def set_driver_version(session, cp, version, policy):
    """Point the ClusterPolicy (or every NVIDIADriver in CRD mode) at ``version`` with ``policy`` merged into its
    ``upgradePolicy``; True if anything changed."""
    driver = (cp.get("spec") or {}).get("driver") or {}
    crd_mode = driver.get("useNvidiaDriverCRD")
    changed = False
    cp_patch = {}
    if not crd_mode and version and driver.get("version") != version:
        cp_patch["version"] = version
    have_policy = driver.get("upgradePolicy") or {}
    want_policy = {k: v for k, v in (policy or {}).items() if have_policy.get(k) != v}
    if want_policy:
        cp_patch["upgradePolicy"] = want_policy
    if cp_patch:
        session.write(
            "ClusterPolicy %s: set spec.driver %s" % (name_of(cp), ", ".join(_settings(cp_patch))),
            "PATCH",
            cluster_policy_path(cp),
            {"spec": {"driver": cp_patch}},
        )
        changed = True
    if crd_mode and version:
        for nvd in session.nvidia_drivers():
            if (nvd.get("spec") or {}).get("version") != version:
                session.write(
                    "NVIDIADriver %s: set spec.version=%s" % (name_of(nvd), version),
                    "PATCH",
                    "/apis/nvidia.com/v1alpha1/nvidiadrivers/%s" % quote(name_of(nvd), safe=""),
                    {"spec": {"version": version}},
                )
                changed = True
    return changed


def wait_upgraded(session, members, target, timeout):
    """Wait until every member runs ``target`` (upgrade-done); returns ``(failed {node: why}, status {node:
    detail})``. Stops at the first failed node (abort latency is one poll)."""
    deadline = session.clock() + timeout
    last = {}

    def check():
        by_name = session.nodes_by_name()
        last.clear()
        failed = {}
        for n in members:
            node = by_name.get(n)
            if node is None:
                failed[n] = "node disappeared"
                continue
            status, detail = node_upgrade_status(node, target)
            last[n] = detail
            if status == "failed":
                failed[n] = detail
        if failed:
            return True, failed
        return all(node_upgrade_status(by_name[n], target)[0] == "done" for n in members), {}

    done, failed = session.wait(deadline, check)
    if not done:
        failed = {
            n: "not upgraded within %ds (%s)" % (timeout, last.get(n))
            for n in members
            if "state upgrade-done" not in (last.get(n) or "") or (target and target not in (last.get(n) or ""))
        } or dict.fromkeys(members, "not upgraded within %ds" % timeout)
    return failed, dict(last)
