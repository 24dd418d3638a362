# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The driver version, used by prepare, the waves and the rollback: point the ClusterPolicy (or every NVIDIADriver)
at a version, and wait for nodes to run it, with where they stand."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import namedtuple
from urllib.parse import quote

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import name_of
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.progress import (
    DONE,
    FAILED,
    node_progress,
    stalled,
    upgrade_report,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.session import (
    cluster_policy_path,
)


def value_text(value):
    """A setting's value as people write it: ``true``, ``25%``, ``(unset)`` for None."""
    return "(unset)" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def _settings(patch, prefix=""):
    """A patch as ``key=value`` words, nested keys dotted: ``upgradePolicy.autoUpgrade=true``, ``version=610.1``."""
    words = []
    for key, value in sorted(patch.items()):
        if isinstance(value, dict):
            words.extend(_settings(value, prefix + key + "."))
        else:
            words.append("%s%s=%s" % (prefix, key, value_text(value)))
    return words


def crd_mode(cp):
    """True when NVIDIADriver resources, not the ClusterPolicy, carry the driver version."""
    return bool(((cp.get("spec") or {}).get("driver") or {}).get("useNvidiaDriverCRD"))


def policy_changes(cp, policy):
    """``{key: (value now, value wanted)}`` of the ``upgradePolicy`` keys ``policy`` changes."""
    have = (((cp.get("spec") or {}).get("driver") or {}).get("upgradePolicy")) or {}
    return {k: (have.get(k), v) for k, v in (policy or {}).items() if have.get(k) != v}


def set_driver_version(session, cp, version, policy, versions=None):
    """Point the ClusterPolicy (or, in CRD mode, every NVIDIADriver: at its entry in ``versions`` when it has one)
    at ``version``, with ``policy`` merged into its ``upgradePolicy``; True if anything changed."""
    driver = (cp.get("spec") or {}).get("driver") or {}
    changed = False
    cp_patch = {}
    if not crd_mode(cp) and version and driver.get("version") != version:
        cp_patch["version"] = version
    want_policy = {k: v[1] for k, v in policy_changes(cp, policy).items()}
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
    if crd_mode(cp) and (version or versions):
        for nvd in session.nvidia_drivers():
            want = (versions or {}).get(name_of(nvd), version)
            if want and (nvd.get("spec") or {}).get("version") != want:
                session.write(
                    "NVIDIADriver %s: set spec.version=%s" % (name_of(nvd), want),
                    "PATCH",
                    "/apis/nvidia.com/v1alpha1/nvidiadrivers/%s" % quote(name_of(nvd), safe=""),
                    {"spec": {"version": want}},
                )
                changed = True
    return changed


#: A wait of :func:`wait_upgraded`: its name in the progress report, how long it may take and, when ``grace`` is
#: set, how long nothing may move before it stops (:func:`.progress.stalled`).
UpgradeWait = namedtuple("UpgradeWait", "title timeout grace")


def wait_upgraded(session, members, target, timer, wait):
    """Wait until every member runs ``target`` (upgrade-done) for at most ``wait.timeout`` seconds (an
    :class:`UpgradeWait`); returns ``(failed {node: why}, progress report)``. Stops at the first failed node (at the
    watch event that shows it, one poll at most), and, with ``wait.grace``, when nothing can progress (no upgrade
    state or driver moved for that many seconds). ``timer`` (see :meth:`.session.CanarySession.timer`) keeps the
    deadline and the last movement across calls."""
    title, timeout, grace = wait
    deadline = timer["since"] + timeout
    statuses = {}
    pending = set()

    def check():
        by_name = session.nodes_by_name()
        statuses.clear()
        statuses.update((n, node_progress(by_name.get(n), target)) for n in members)
        marks = {n: v[1] for n, v in statuses.items()}
        if marks != timer.get("marks"):
            timer["marks"], timer["moved"] = marks, int(session.clock())
        pending.clear()
        pending.update(n for n, v in statuses.items() if v[0] != DONE)
        failed = {n: v[2] for n, v in statuses.items() if v[0] == FAILED}
        if failed:
            return True, failed
        if grace and stalled(statuses, session.clock() - timer["moved"], grace):
            return True, {
                n: "nothing moved for %d s, so nothing can progress (%s)" % (grace, v[2])
                for n, v in statuses.items()
                if v[0] != DONE
            }
        return all(v[0] == DONE for v in statuses.values()), {}

    def wake(event):
        """A member failed, or the last one is done: what the next check acts on (the resync sees the rest)."""
        node = event.get("object")
        name = name_of(node)
        if name not in statuses:
            return False
        state = node_progress(node, target)[0]
        if state == DONE:
            pending.discard(name)
        else:
            pending.add(name)
        return state == FAILED or not pending

    def progress(waiting=True):
        return upgrade_report(title, statuses, session.clock() - timer["since"], timeout, waiting)

    done, failed = session.wait(deadline, check, progress, wake)
    if not done:
        failed = {n: "not upgraded within %d s (%s)" % (timeout, v[2]) for n, v in statuses.items() if v[0] != DONE}
    return failed, progress(False)
