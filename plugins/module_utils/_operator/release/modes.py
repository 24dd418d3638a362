# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The operator's three install modes and the gate before GPUCluster mode.

* ``clusterpolicy``: the ClusterPolicy manages every operand, the driver included (the chart's default);
* ``nvidiadriver``: the ClusterPolicy with the driver managed through NVIDIADriver objects
  (``driver.nvidiaDriverCRD.enabled``; GA for new installs since 26.3.0);
* ``gpucluster``: the GPUCluster CR (``clusterPolicy.deployCR=false``, ``gpuCluster.deployCR=true``, from 26.7.0)
  deploys the DRA driver instead: GPUs reach pods through ResourceClaims, nodes advertise no ``nvidia.com/gpu``.
  New installs only, never next to a ClusterPolicy, Kubernetes >= 1.34.2 and a host driver >= 580
  (operator-26-and-dra.md, "Through the operator from 26.7.0").
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import get_in, is_true, name_of
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.compat import version_tuple
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.release.errors import ReleaseError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.values import deep_merge, nest_paths

MODES = ("clusterpolicy", "nvidiadriver", "gpucluster")
GPUCLUSTER_MIN_KUBERNETES = (1, 34, 2)
GPUCLUSTER_MIN_DRIVER = 580

#: The custom resource whose status says whether the operator has rolled out, per mode.
STATE_KIND = {"clusterpolicy": "ClusterPolicy", "nvidiadriver": "ClusterPolicy", "gpucluster": "GPUCluster"}


def release_mode(values):
    """The mode chart ``values`` (the chart's defaults with the release's values on top) select."""
    if is_true(get_in(values, "gpuCluster", "deployCR")):
        return "gpucluster"
    if is_true(get_in(values, "driver", "nvidiaDriverCRD", "enabled")):
        return "nvidiadriver"
    return "clusterpolicy"


def has_gpucluster_mode(chart_defaults):
    """Whether a chart ships GPUCluster mode: values for the GPUCluster CR and for the DRA driver it deploys."""
    return isinstance(chart_defaults.get("gpuCluster"), dict) and isinstance(chart_defaults.get("draDriver"), dict)


#: The chart values each mode needs, as ``(path, value)``.
MODE_SETTINGS = {
    "clusterpolicy": (
        ("clusterPolicy.deployCR", True),
        ("gpuCluster.deployCR", False),
        ("driver.nvidiaDriverCRD.enabled", False),
    ),
    "nvidiadriver": (
        ("clusterPolicy.deployCR", True),
        ("gpuCluster.deployCR", False),
        ("driver.nvidiaDriverCRD.enabled", True),
    ),
    # the chart refuses a GPUCluster without NVIDIADriver objects while it deploys the driver (driver.enabled)
    "gpucluster": (
        ("clusterPolicy.deployCR", False),
        ("gpuCluster.deployCR", True),
        ("driver.nvidiaDriverCRD.enabled", True),
    ),
}
#: The paths of MODE_SETTINGS that apply only while the chart deploys the driver (``driver.enabled``).
DRIVER_ONLY = {("gpucluster", "driver.nvidiaDriverCRD.enabled")}
#: The DeviceClass API versions a GPUCluster needs one of (what the chart's DRA check reads from .Capabilities).
DEVICE_CLASS_APIS = ("resource.k8s.io/v1", "resource.k8s.io/v1beta2", "resource.k8s.io/v1beta1")


def mode_values(mode, chart_defaults, version, driver_enabled=True):
    """``{dotted path: value}`` that select ``mode`` on chart ``version``: only settings under a key the chart has
    whose default (unset: false) differs, so a release installed in the chart's default mode gets no new values, and
    the driver's settings only while the chart deploys the driver (``driver_enabled``); ReleaseError when the chart
    has no such mode."""
    if mode == "gpucluster" and not has_gpucluster_mode(chart_defaults):
        raise ReleaseError(
            "mode gpucluster needs a chart that ships the GPUCluster CR and the DRA driver (GPU Operator v26.7.0 "
            "or later); chart %s has no gpuCluster and draDriver values. Set chart_version to v26.7.0 or later, "
            "or use mode clusterpolicy" % version,
            refused=True,
            to_version=version,
        )
    return {
        path: value
        for path, value in MODE_SETTINGS[mode]
        if path.split(".", 1)[0] in chart_defaults
        and is_true(get_in(chart_defaults, *path.split("."))) != value
        and (driver_enabled or (mode, path) not in DRIVER_ONLY)
    }


def with_mode_values(fleet, mode, chart_defaults, version, user_values=None):
    """A copy of ``fleet`` (the synthesised values) with the values that select ``mode`` (None: none) and the reason.
    Whether the chart deploys the driver is read from the chart's defaults, ``fleet`` and ``user_values`` together."""
    fleet = dict(fleet or {})
    merged = deep_merge(deep_merge(chart_defaults, fleet.get("values") or {}), user_values or {})
    driver_enabled = get_in(merged, "driver", "enabled") is not False
    selecting = mode_values(mode, chart_defaults, version, driver_enabled) if mode else {}
    if selecting:
        fleet["values"] = deep_merge(fleet.get("values") or {}, nest_paths(selecting))
        fleet["reasons"] = list(fleet.get("reasons") or []) + [
            "mode %s: %s" % (mode, ", ".join("%s=%s" % (k, str(v).lower()) for k, v in sorted(selecting.items())))
        ]
    return fleet


def check_selected_mode(mode, values):
    """Raise ReleaseError when the effective ``values`` (chart defaults included) select another mode than ``mode``
    (the user's values overrode the synthesised ones)."""
    selected = release_mode(values)
    if mode and selected != mode:
        raise ReleaseError(
            "your values select mode %s but mode is %s: remove clusterPolicy.deployCR, gpuCluster.deployCR and "
            "driver.nvidiaDriverCRD.enabled from values and values_files, or set mode to %s"
            % (selected, mode, selected),
            refused=True,
        )


def check_gpucluster_values(values):
    """Raise ReleaseError, naming the value to set, for effective ``values`` (chart defaults included) in GPUCluster
    mode that the chart's validations refuse: both CRs at once, or the driver deployed without NVIDIADriver objects."""
    if release_mode(values) != "gpucluster":
        return
    fixes = []
    if is_true(get_in(values, "clusterPolicy", "deployCR")):
        fixes.append(
            "clusterPolicy.deployCR is true next to gpuCluster.deployCR=true and a ClusterPolicy cannot coexist with "
            "a GPUCluster: set clusterPolicy.deployCR=false (or remove it from values and values_files)"
        )
    if get_in(values, "driver", "enabled") is not False and not is_true(
        get_in(values, "driver", "nvidiaDriverCRD", "enabled")
    ):
        fixes.append(
            "a GPUCluster takes the operator's driver from NVIDIADriver objects only: set "
            "driver.nvidiaDriverCRD.enabled=true (or remove it from values and values_files), or set "
            "driver.enabled=false where every GPU host has its driver installed"
        )
    if fixes:
        raise ReleaseError(
            "the chart refuses these values in GPUCluster mode, so nothing was written: %s" % "; ".join(fixes),
            refused=True,
        )


def dra_served(resources):
    """Whether API discovery (``resources``, as :func:`.._clients.k8s.api_resources` returns them) lists a
    DeviceClass in a ``resource.k8s.io`` version the operator's chart accepts."""
    return any(r["kind"] == "DeviceClass" and r["group_version"] in DEVICE_CLASS_APIS for r in resources)


def gate_mode(kube, mode, deployed_mode, fleet, resources=None):
    """Refuse, before any write, a mode the cluster cannot take (:func:`mode_gate`, with the API server's version and
    ClusterPolicies read only when they matter); return the warnings."""
    if mode != "gpucluster" and deployed_mode in (None, mode):
        return []
    refusals, warnings = mode_gate(
        mode,
        deployed_mode,
        kube.version()["git_version"],
        kube.list_custom("nvidia.com", "v1", "clusterpolicies"),
        (fleet or {}).get("driver_versions"),
    )
    if mode == "gpucluster" and resources is not None and not dra_served(resources):
        refusals.append(
            "the API server serves no resource.k8s.io DeviceClass (%s), which the GPUCluster's DRA driver needs and "
            "the chart checks: turn Dynamic Resource Allocation on (Kubernetes 1.34 or later serves resource.k8s.io/v1 "
            "by default), or keep mode clusterpolicy" % ", ".join(DEVICE_CLASS_APIS)
        )
    if refusals:
        raise ReleaseError("mode %s refused: %s" % (mode, "; ".join(refusals)), refused=True, mode=mode)
    return warnings


def mode_gate(mode, deployed_mode, kubernetes_version, cluster_policies, driver_versions):
    """``(refusals, warnings)``: sentences that stop ``mode`` here, and what could not be checked.

    ``deployed_mode``: the installed release's mode (None: not installed); ``kubernetes_version``: the API server's
    ``gitVersion``; ``cluster_policies``: the ClusterPolicy objects in the cluster; ``driver_versions``: ``{node:
    host driver version or None}`` from the GPU hosts' facts (the ``fleet``).
    """
    refusals, warnings = [], []
    if deployed_mode and deployed_mode != mode and "gpucluster" in (mode, deployed_mode):
        refusals.append(
            "the release runs in %s mode and the operator does not migrate between ClusterPolicy and GPUCluster "
            "(GPUCluster mode is for new installs only): keep mode %s, or uninstall the release (state: absent, "
            "with its workloads moved off) and install it again with mode %s" % (deployed_mode, deployed_mode, mode)
        )
    if mode != "gpucluster":
        return refusals, warnings
    policies = sorted(name_of(p) for p in cluster_policies or [])
    if policies and deployed_mode != "clusterpolicy":
        refusals.append(
            "ClusterPolicy %s exists: a ClusterPolicy and a GPUCluster cannot coexist (the operator reports "
            "PrerequisiteNotMet) and the operator does not migrate a ClusterPolicy. Delete it with the release that "
            "created it (kubectl delete clusterpolicy %s) or keep mode clusterpolicy"
            % (", ".join(policies), " ".join(policies))
        )
    if version_tuple(kubernetes_version)[:3] < GPUCLUSTER_MIN_KUBERNETES:
        refusals.append(
            "GPUCluster mode needs Kubernetes 1.34.2 or later (resource.k8s.io/v1 and the DRA driver's "
            "requirements); the API server runs %s. Upgrade the control plane first, or keep mode clusterpolicy"
            % (kubernetes_version or "an unknown version")
        )
    old = sorted(
        "%s (%s)" % (node, version)
        for node, version in (driver_versions or {}).items()
        if version and version_tuple(version)[:1] < (GPUCLUSTER_MIN_DRIVER,)
    )
    if old:
        refusals.append(
            "GPUCluster mode needs a host driver %d or later; these nodes run older ones: %s. Upgrade their driver "
            "(R580 is a long-term branch) with your host tooling first" % (GPUCLUSTER_MIN_DRIVER, ", ".join(old))
        )
    unknown = sorted(node for node, version in (driver_versions or {}).items() if not version)
    if unknown:
        warnings.append(
            "GPUCluster mode needs a host driver %d or later, and no driver version is known for %s (no host facts, "
            "or no driver loaded): check it before workloads land there" % (GPUCLUSTER_MIN_DRIVER, ", ".join(unknown))
        )
    return refusals, warnings
