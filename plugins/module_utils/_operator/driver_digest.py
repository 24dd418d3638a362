# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""What the GPU Operator's driver config digest covers, and when its upgrade controller restarts a driver in place.

From operator 26.7.0 on, the operator writes a hash of the driver's install-relevant settings into the driver pod
template as the env ``DRIVER_CONFIG_DIGEST`` (on the driver-manager init container and the driver container). When
a driver pod is out of date with its DaemonSet and both the running pod and the DaemonSet template carry a digest,
and the two are equal, the upgrade controller cordons the node and restarts the driver pod in place: no wait for
jobs, no GPU pod deletion, no drain. Any other case (a digest missing on either side, different digests, a node
whose upgrade was requested) takes the full flow, which evicts the GPU workloads. Releases before 26.7.0 always
take the full flow.

The digest covers the driver's images (driver, driver manager, peermem, GDS, GDRCopy, driver toolkit), its type
and kernel module type, its command and arguments, the plain env values of the driver, manager, GDS and GDRCopy
containers, the env secret, the RDMA/host-MOFED/GDS/GDRCopy switches, the licensing, virtual-topology,
kernel-module, repository and certificate config names, precompiled drivers, proxies, volumes and the host root.
It does not cover resources, probes, tolerations, node selectors, security contexts, the image pull policy, the
priority class, the service account, labels or annotations.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.compat import version_tuple

#: The env the operator sets on the driver containers.
DIGEST_ENV = "DRIVER_CONFIG_DIGEST"

#: The first operator release with the in-place driver restart.
IN_PLACE_SINCE = "v26.7.0"

#: The label third-party GPU-client DaemonSets select on; the operator evicts their pods during driver upgrades and
#: MIG changes (26.7.0 and later).
CLIENT_LABEL = "nvidia.com/gpu.deploy.client"

#: The chart value keys (paths) that feed the digest; a change of any other key leaves it as it is.
_DRIVER_KEYS = (
    "repository",
    "image",
    "version",
    "kernelModuleType",
    "useOpenKernelModules",
    "usePrecompiled",
    "env",
    "args",
    "secretEnv",
    "licensingConfig",
    "virtualTopology",
    "kernelModuleConfig",
    "repoConfig",
    "certConfig",
    "rdma",
)
_MANAGER_KEYS = ("repository", "image", "version", "env")
_SIDECARS = ("gds", "gdrcopy")
_SIDECAR_KEYS = ("enabled", "repository", "image", "version", "env")

DIGEST_PATHS = (
    tuple(("driver", k) for k in _DRIVER_KEYS)
    + tuple(("driver", "manager", k) for k in _MANAGER_KEYS)
    + tuple((s, k) for s in _SIDECARS for k in _SIDECAR_KEYS)
)


def restarts_in_place(chart_version):
    """True if the operator release ``chart_version`` (``v26.7.0``) has the in-place driver restart."""
    have = version_tuple(chart_version)
    return bool(have) and have >= version_tuple(IN_PLACE_SINCE)


def pod_digest(pod_spec):
    """The ``DRIVER_CONFIG_DIGEST`` of a pod spec (a pod's or a DaemonSet template's): the first non-empty value,
    init containers first, as the operator reads it; ``""`` when there is none."""
    spec = pod_spec or {}
    for container in list(spec.get("initContainers") or []) + list(spec.get("containers") or []):
        for env in container.get("env") or []:
            if env.get("name") == DIGEST_ENV and env.get("value"):
                return env["value"]
    return ""


def _at(values, path):
    for key in path:
        if not isinstance(values, dict) or key not in values:
            return None, False
        values = values[key]
    return values, True


def digest_changes(values, cp_spec):
    """The dotted chart value paths in ``values`` that feed the digest and differ from the ClusterPolicy spec
    ``cp_spec`` (the chart renders them there one to one)."""
    changed = []
    for path in DIGEST_PATHS:
        want, given = _at(values or {}, path)
        if given and want != _at(cp_spec or {}, path)[0]:
            changed.append(".".join(path))
    return changed


def selects_client_label(pod_spec):
    """True if a pod spec's node selector or required node affinity names :data:`CLIENT_LABEL`."""
    spec = pod_spec or {}
    if CLIENT_LABEL in (spec.get("nodeSelector") or {}):
        return True
    affinity = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    return any(
        expr.get("key") == CLIENT_LABEL
        for term in affinity.get("nodeSelectorTerms") or []
        for expr in term.get("matchExpressions") or []
    )
