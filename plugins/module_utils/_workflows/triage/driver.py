# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""GPU triage, ``driver`` layer: why a driver pod is not Ready, from its termination, log and events (pure)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.triage.common import (
    CRASH_REASONS,
    IMAGE_REASONS,
    finding,
)

#: Driver termination messages -> (what it means, the fix). First match wins.
DRIVER_CAUSES = (
    (
        ("kernel-headers", "Could not resolve Linux kernel version", "kernel-devel"),
        "kernel headers for the running kernel cannot be found",
        "Make the kernel headers/devel packages for the node's kernel reachable from the driver container "
        "(package repositories, proxy), or use precompiled driver images (driver.usePrecompiled) and pin the kernel.",
    ),
    (
        ("nouveau",),
        "the nouveau driver holds the GPU",
        "Blacklist nouveau on the node (blacklist nouveau; options nouveau modeset=0), rebuild the initramfs "
        "and reboot.",
    ),
    (
        ("unsigned module", "Key was rejected"),
        "Secure Boot rejects the unsigned kernel module",
        "Use a signed host-installed driver (driver.enabled=false) or signed precompiled driver images, or turn "
        "Secure Boot off on the node.",
    ),
    (
        ("driver is in use", "already loaded"),
        "a host driver is loaded or the GPUs are in use",
        "Label the node nvidia.com/gpu.deploy.driver=false (host driver) or stop the GPU clients before the "
        "driver container loads its modules.",
    ),
)


def driver_finding(node_name, driver, evidence, operator_namespace):
    """The finding for a driver pod that is not Ready on ``node_name``.

    ``driver`` is the pod's operand summary, ``evidence`` its pod evidence (termination, events, log tail); the
    cause is the first of :data:`DRIVER_CAUSES` that its text names.
    """
    term = evidence.get("last_termination") or {}
    text = "\n".join(
        [term.get("message") or ""]
        + (evidence.get("log_tail") or [])
        + [e["message"] or "" for e in evidence["events"]]
    )
    cause, fix = (
        None,
        (
            "Read the driver container's log (kubectl logs -n %s %s -c nvidia-driver-ctr --previous)"
            % (operator_namespace, driver["name"])
        ),
    )
    for needles, what, how in DRIVER_CAUSES:
        if any(n in text for n in needles):
            cause, fix = what, how
            break
    waiting = driver["waiting_reason"]
    if waiting in IMAGE_REASONS:
        reason = "DriverImagePull"
        cause = cause or "the driver image for this OS/kernel cannot be pulled"
        fix = "Check driver.repository/version and that <repository>/driver:<version>-<os> exists in the registry."
    elif waiting in CRASH_REASONS or term:
        reason = "DriverCrashLoop"
    else:
        reason = "DriverNotReady"
    message = "driver pod %s on %s is %s" % (driver["name"], node_name, waiting or driver["phase"])
    if driver["restarts"]:
        message += " (%d restarts)" % driver["restarts"]
    if term.get("reason"):
        message += ", last termination %s (exit %s)" % (term["reason"], term.get("exit_code"))
    if cause:
        message += ": %s" % cause
    last_line = (term.get("message") or "").strip().splitlines()
    if last_line:
        message += ' - "%s"' % last_line[-1][:200]
    evidence["cause"] = cause
    return finding("driver", reason, "error", message, fix, evidence, nodes=[node_name])
