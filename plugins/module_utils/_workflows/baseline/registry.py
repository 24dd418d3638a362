# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change incompatibly at any
# time, including in a patch release. Do not use it elsewhere.

"""The check registry: every built-in check by id, the catalogue, and the options that tune the checks.

Users skip checks by id, change a check's severity, or add their own (already evaluated by the role, per host):
:func:`options` validates all three and names unknown ids.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator import compat
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.release.modes import MODES
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline import (
    cluster_checks,
    dra_checks,
    drift,
    driver_checks,
    host_checks,
    node_checks,
    runtime_checks,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline.model import (
    SEVERITIES,
    BaselineError,
    Check,
)

POLICIES = ("operator-managed", "preinstalled")

#: Every built-in check by id: each :class:`Check` the check modules define (with ``@check``).
REGISTRY = {
    c.id: c
    for module in (host_checks, driver_checks, runtime_checks, node_checks, cluster_checks, drift, dra_checks)
    for c in vars(module).values()
    if isinstance(c, Check)
}


def catalogue():
    """Every built-in check: ``[{id, scope, severity, title}]`` sorted by id (for docs and the lookup)."""
    return [
        {"id": c.id, "scope": c.scope, "severity": c.severity, "title": c.title}
        for c in sorted(REGISTRY.values(), key=lambda c: c.id)
    ]


def options(raw):
    """Validated options with defaults; raises BaselineError naming every bad id or value."""
    raw = dict(raw or {})
    opts = {
        "operator_version": raw.get("operator_version") or "v26.7.0",
        "driver_policy": raw.get("driver_policy") or "operator-managed",
        "driver_version": raw.get("driver_version") or None,
        "kernel_module_type": raw.get("kernel_module_type") or "auto",
        "use_precompiled": bool(raw.get("use_precompiled")),
        # None: the registry's tags are not known (the check names the tag to look for)
        "precompiled_tags": None if raw.get("precompiled_tags") is None else [str(t) for t in raw["precompiled_tags"]],
        "cuda_version": raw.get("cuda_version") or None,
        "toolkit_env": dict(raw.get("toolkit_env") or {}),
        "nfd_enabled": raw.get("nfd_enabled", True) is not False,
        "dcgm_exporter_enabled": raw.get("dcgm_exporter_enabled", True) is not False,
        "service_monitor_enabled": raw.get("service_monitor_enabled"),
        "runtime_class": raw.get("runtime_class") or "nvidia",
        "nri_plugin": bool(raw.get("nri_plugin")),
        "operator_namespace": raw.get("operator_namespace") or None,  # None: the one the cluster read found
        "operator_mode": raw.get("operator_mode") or None,
        "skip": list(raw.get("skip") or []),
        "severity": dict(raw.get("severity") or {}),
        "user_checks": list(raw.get("user_checks") or []),
    }
    _check_target(opts)
    if opts["service_monitor_enabled"] is None:
        opts["service_monitor_enabled"] = opts["release"]["service_monitor_default"]
    _check_tuning(opts, set(REGISTRY) | set(_user_check_ids(opts["user_checks"])))
    return opts


def _check_target(opts):
    """Set ``opts["release"]``; raise BaselineError for a release, policy, install mode, module type or CUDA version
    unknown, or for GPUCluster mode on a release without it."""
    try:
        opts["release"] = compat.release(opts["operator_version"])
    except compat.CompatError as exc:
        raise BaselineError("gpu_baseline_operator_version: %s" % exc) from None
    if opts["driver_policy"] not in POLICIES:
        raise BaselineError(
            "gpu_baseline_driver_policy is %r; use one of %s" % (opts["driver_policy"], ", ".join(POLICIES))
        )
    if opts["operator_mode"] not in (None,) + MODES:
        raise BaselineError(
            "gpu_baseline_operator_mode is %r; use one of %s, or leave it unset for the chart's default"
            % (opts["operator_mode"], ", ".join(MODES))
        )
    if opts["operator_mode"] == "gpucluster" and not opts["release"]["dra_driver"]:
        raise BaselineError(
            "gpu_baseline_operator_mode is gpucluster but operator %s has no GPUCluster mode (it deploys no DRA "
            "driver); set gpu_baseline_operator_version to v26.7.0 or later, or use mode clusterpolicy"
            % opts["operator_version"]
        )
    if opts["kernel_module_type"] not in ("auto", "open", "proprietary"):
        raise BaselineError(
            "gpu_baseline_kernel_module_type is %r; use auto, open or proprietary" % opts["kernel_module_type"]
        )
    if opts["cuda_version"]:
        try:
            compat.min_driver_for_cuda(opts["cuda_version"])
        except compat.CompatError as exc:
            raise BaselineError("gpu_baseline_cuda_version: %s" % exc) from None


def _user_check_ids(user_checks):
    """The ids of the user checks; raise BaselineError for one without an id, a taken id or a bad severity."""
    user_ids = []
    for i, uc in enumerate(user_checks):
        if not isinstance(uc, dict) or not uc.get("id"):
            raise BaselineError("gpu_baseline_user_checks[%d] has no id; every user check needs id, failed and fix" % i)
        if uc["id"] in REGISTRY or uc["id"] in user_ids:
            raise BaselineError("gpu_baseline_user_checks[%d]: id %r is already taken; pick another" % (i, uc["id"]))
        if uc.get("severity", "fail") not in SEVERITIES:
            raise BaselineError(
                "gpu_baseline_user_checks[%d] (%s): severity %r; use fail, warn or info" % (i, uc["id"], uc["severity"])
            )
        user_ids.append(uc["id"])
    return user_ids


def _check_tuning(opts, known):
    """Raise BaselineError for ids in ``skip`` or ``severity`` that are not ``known``, or a bad severity."""
    unknown = sorted(set(opts["skip"]) - known)
    if unknown:
        raise BaselineError(
            "gpu_baseline_skip names unknown check id(s): %s; known ids are listed in docs/baseline.md"
            % ", ".join(unknown)
        )
    unknown = sorted(set(opts["severity"]) - known)
    if unknown:
        raise BaselineError("gpu_baseline_severity names unknown check id(s): %s" % ", ".join(unknown))
    bad_values = sorted("%s=%s" % (k, v) for k, v in opts["severity"].items() if v not in SEVERITIES)
    if bad_values:
        raise BaselineError("gpu_baseline_severity: %s; a severity is fail, warn or info" % ", ".join(bad_values))


def with_user_checks(raw, user_checks):
    """``raw`` with ``user_checks`` given apart: the role passes them apart so that Ansible templates a check's
    ``failed`` only when a check reads it (on the host, after the facts are gathered), never when the options
    are stored."""
    if user_checks is None:
        return raw
    out = dict(raw or {})
    out["user_checks"] = user_checks
    return out
