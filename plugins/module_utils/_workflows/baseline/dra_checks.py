# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change incompatibly at any
# time, including in a patch release. Do not use it elsewhere.

"""The DRA prerequisites of GPUCluster mode (``gpu_baseline_operator_mode: gpucluster``), each naming its layer:
Kubernetes 1.34.2 or later and ``resource.k8s.io/v1`` served (cluster, layer ``dra``), a driver 580 or later
(per host, layer ``driver``) and CDI enabled in the container runtime (per host, layer ``toolkit``). The minimums
are the ones the gpu_operator module's GPUCluster gate refuses below (``_operator.release.modes``). In the other
modes these checks do not run: they are absent from the results."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator import compat
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.release.modes import (
    GPUCLUSTER_MIN_DRIVER,
    GPUCLUSTER_MIN_KUBERNETES,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.values import driver_version
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline.facts import (
    DRIVER_SOURCE,
    driver_unknown,
    fact,
    operator_managed,
    target_driver,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline.model import (
    bad,
    check,
    na,
    ok,
    unknown,
    unread,
)

_GPUCLUSTER = ("gpucluster",)
_MIN_KUBERNETES = ".".join(str(p) for p in GPUCLUSTER_MIN_KUBERNETES)
#: What gpu_preflight_info's API discovery reports for ``resource.k8s.io/v1`` (its ``crds`` section).
RESOURCE_API = "resourceslices.resource.k8s.io"
#: The files that would name the container runtime when none was detected.
_RUNTIME_SOURCES = ("/etc/containerd", "/etc/crio", "/etc/docker", "/var/lib/rancher")
#: Runtime -> how to turn CDI on in its config (the k3s/RKE2 template where there is one: it renders the config).
_CDI_FIX = {
    "containerd": "Set enable_cdi = true in the CRI plugin's table of %s ([plugins.\"io.containerd.grpc.v1.cri\"] "
    'in a version 2 config, [plugins."io.containerd.cri.v1.runtime"] in version 3) and restart containerd.',
    "docker": 'Set "features": {"cdi": true} in %s and restart docker.',
}


@check(
    "dra.kubernetes_version",
    "cluster",
    "fail",
    "Kubernetes is 1.34.2 or later (GPUCluster mode)",
    layer="dra",
    modes=_GPUCLUSTER,
)
def _kubernetes_version(cluster, hosts, opts):
    v = fact(cluster, "kubernetes_version", "git_version")
    if not v:
        return unread(
            "the Kubernetes version (gpu_preflight_info read no /version)",
            "Run gpu_preflight_info with the version section and evaluate the baseline again.",
        )
    if compat.version_tuple(v)[:3] >= GPUCLUSTER_MIN_KUBERNETES:
        return ok("Kubernetes %s is %s or later" % (v, _MIN_KUBERNETES))
    return bad(
        "Kubernetes %s is older than %s, the minimum of GPUCluster mode and of the DRA driver %s"
        % (v, _MIN_KUBERNETES, opts["release"]["dra_driver"]),
        "Upgrade the control plane and then the kubelets to %s or later before installing in GPUCluster mode, or "
        "install in mode clusterpolicy (gpuops_operator_mode)." % _MIN_KUBERNETES,
    )


@check(
    "dra.api_served",
    "cluster",
    "fail",
    "The API server serves resource.k8s.io/v1 (GPUCluster mode)",
    layer="dra",
    modes=_GPUCLUSTER,
)
def _api_served(cluster, hosts, opts):
    served = fact(cluster, "crds", RESOURCE_API)
    if served is None:
        return unread(
            "whether resource.k8s.io/v1 is served (gpu_preflight_info read no API discovery)",
            "Run gpu_preflight_info with the crds section and evaluate the baseline again.",
        )
    if served:
        return ok("resource.k8s.io/v1 is served (API discovery lists resourceslices)")
    return bad(
        "the API server does not serve resource.k8s.io/v1 (no resourceslices under /apis/resource.k8s.io/v1): "
        "the DRA driver cannot publish ResourceSlices and no ResourceClaim can be allocated",
        "Kubernetes 1.34 and later serve it by default: upgrade the control plane to %s or later, and remove a "
        "--runtime-config=resource.k8s.io/v1=false from the kube-apiserver flags." % _MIN_KUBERNETES,
    )


@check(
    "dra.driver_version",
    "host",
    "fail",
    "The NVIDIA driver is 580 or later (GPUCluster mode)",
    layer="driver",
    modes=_GPUCLUSTER,
)
def _driver_version(ctx, opts):
    if operator_managed(opts):
        driver, whose = target_driver(opts), "the operator's driver"
    else:
        driver, whose = driver_version(ctx), "host driver"
    if not driver and driver_unknown(ctx):
        return unknown(ctx, "which NVIDIA driver is loaded", DRIVER_SOURCE)
    if not driver:
        return na("no host driver is loaded (see driver.preinstalled_present)")
    if compat.driver_at_least(driver, str(GPUCLUSTER_MIN_DRIVER)):
        return ok("%s %s is %d or later" % (whose, driver, GPUCLUSTER_MIN_DRIVER))
    if operator_managed(opts):
        fix = "Set gpu_baseline_driver_version (driver.version) to a listed driver %d or later, for example %s." % (
            GPUCLUSTER_MIN_DRIVER,
            compat.nearest_driver(opts["operator_version"], str(GPUCLUSTER_MIN_DRIVER)),
        )
    else:
        fix = "Upgrade the host driver to R%d (long-term support) or later with your host tooling, then reboot." % (
            GPUCLUSTER_MIN_DRIVER
        )
    return bad("%s %s is older than %d, the minimum of GPUCluster mode" % (whose, driver, GPUCLUSTER_MIN_DRIVER), fix)


@check(
    "dra.cdi_enabled",
    "host",
    "fail",
    "The container runtime has CDI enabled (GPUCluster mode)",
    layer="toolkit",
    modes=_GPUCLUSTER,
)
def _cdi_enabled(ctx, opts):
    rt = fact(ctx, "gpu_host", "container_runtime", default={})
    name = rt.get("name")
    if name is None:
        return unknown(ctx, "the container runtime (none detected), so whether it has CDI enabled", *_RUNTIME_SOURCES)
    if name == "cri-o":
        return ok("CRI-O reads CDI specs without a setting (from CRI-O 1.23)")
    if rt.get("config") is None:
        return unknown(ctx, "whether CDI is enabled in %s's config" % name, str(rt.get("config_path")))
    where = rt.get("template_path") or rt["config_path"]
    enabled = rt["config"].get("cdi_enabled")
    if enabled:
        return ok("CDI is enabled in %s (%s)" % (rt["config_path"], name))
    if enabled is False:
        return bad(
            "CDI is disabled in %s (%s): the DRA driver hands GPUs to containers as CDI devices" % (where, name),
            _CDI_FIX[name] % where,
        )
    if name == "containerd" and rt["config"].get("version") == 3:
        return ok("enable_cdi is not set in %s; containerd 2 (config version 3) enables CDI by default" % where)
    return unread(
        "CDI is not set in %s (%s), and whether it is on by default depends on the runtime's version (containerd "
        "1.7 leaves it off, 2.0 and later turn it on)" % (where, name),
        _CDI_FIX[name] % where,
    )
