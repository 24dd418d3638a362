# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change incompatibly at any
# time, including in a patch release. Do not use it elsewhere.

"""The curated GPU Operator compatibility matrix: data only, no logic (questions go to ``_compat``).

Why a Python module and not a YAML file: this file is read in two places. Modules that import ``_compat``
run on the managed host, and AnsiballZ ships a module's imported ``module_utils`` ``.py`` files and nothing
else, so a ``.yml`` beside it would be missing there. The lookup and filter plugins run on the controller and
import the same module from the installed collection. One file of plain literals (dicts, lists, strings) is
the single source for both, diffable like YAML, versioned by ``DATA_VERSION`` and reviewed row by row.

Every row carries ``source``: the document it was read from. The collection's reference notes
(``gpu-operator.md``, sections 2, 11 and 14) record the commit each document was read at. When a release is
added, add a row here, cite it, bump ``DATA_VERSION`` and extend ``tests/unit/plugins/module_utils/test_compat.py``.

Ranges are inclusive ``[low, high]`` over ``major.minor``. Driver entries are full versions or bare branches
(``"570"`` = any 570.x), exactly as the life-cycle page lists them: the operator's driver containers. A
preinstalled driver is judged by its branch instead (``compat.driver_branches``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DATA_VERSION = "2026.12.3"

_PS = "NVIDIA/cloud-native-docs:gpu-operator/platform-support.rst at the %s docs commit (gpu-operator.md s11)"
_LC = 'NVIDIA/cloud-native-docs:gpu-operator/life-cycle-policy.rst "Component Matrix" %s (gpu-operator.md s11)'
_VALUES = "NVIDIA/gpu-operator:deployments/gpu-operator/values.yaml@%s driver.version (gpu-operator.md s2)"
_NO_DRA = 'no GPUCluster mode, so no DRA driver, before v26.7.0 (operator-26-and-dra.md, "Through the operator")'
_SM = (
    "NVIDIA/gpu-operator:controllers/object_controls.go@v25.10.1 ~L4802 and values.yaml dcgmExporter.serviceMonitor"
    " (gpu-operator.md s2.1, s10, s14 item 16)"
)

#: Operator release (``YY.MM``) -> what it supports. ``os`` maps os-release ``ID`` to ``VERSION_ID`` values.
RELEASES = {
    "24.9": {
        "kubernetes": ["1.24", "1.31"],
        "os": {"ubuntu": ["20.04", "22.04"], "rhel": ["8.8", "8.10"]},
        "rhcos": ["4.12", "4.17"],
        "containerd": ["1.4", "1.7"],
        "cri_o": True,
        "distributions": {"rke2": ["1.24", "1.31"], "microk8s": ["1.26", "1.26"]},
        "default_driver": "550.127.08",
        "recommended_drivers": [],
        "drivers": ["565.57.01", "560.35.03", "535.216.03"],
        "dra_driver": None,
        "chart_default_driver": {"tag": "v24.9.2", "version": "550.144.03"},
        "kernel_module_type_option": False,
        "service_monitor_default": False,
        "service_monitor_without_crd": "cluster_policy_not_ready",
        "source": {
            "support": _PS % "v24.9",
            "drivers": _LC % "24.9.1",
            "chart_default_driver": _VALUES % "v24.9.2",
            "dra_driver": _NO_DRA,
            "kernel_module_type_option": "values.yaml@v24.9.2: no driver.kernelModuleType (gpu-operator.md s2)",
            "service_monitor": _SM,
        },
    },
    "25.3": {
        "kubernetes": ["1.29", "1.33"],
        "os": {"ubuntu": ["20.04", "22.04", "24.04"], "rhel": ["8.8", "8.10", "9.2", "9.4", "9.5", "9.6"]},
        "rhcos": ["4.12", "4.19"],
        "containerd": ["1.6", "2.1"],
        "cri_o": True,
        "distributions": {"rke2": ["1.29", "1.33"]},
        "default_driver": "580.82.07",
        "recommended_drivers": ["580.82.07"],
        "drivers": ["575.57.08", "570", "550.163.01", "535"],
        "dra_driver": None,
        "chart_default_driver": {"tag": "v25.3.4", "version": "580.82.07"},
        "kernel_module_type_option": True,
        "service_monitor_default": False,
        "service_monitor_without_crd": "cluster_policy_not_ready",
        "source": {
            "support": _PS % "v25.3",
            "drivers": _LC % "25.3.3",
            "chart_default_driver": _VALUES % "v25.3.4",
            "dra_driver": _NO_DRA,
            "kernel_module_type_option": "driver.useOpenKernelModules replaced by kernelModuleType in v25.3.0"
            " (gpu-operator.md s2.1)",
            "service_monitor": _SM,
        },
    },
    "25.10": {
        "kubernetes": ["1.30", "1.34"],
        "os": {"ubuntu": ["20.04", "22.04", "24.04"], "rhel": ["8.8", "8.10", "9.2", "9.4", "9.6"]},
        "rhcos": ["4.14", "4.20"],
        "containerd": ["1.7", "2.1"],
        "cri_o": True,
        "distributions": {"rke2": ["1.30", "1.34"], "k0s": ["1.30", "1.34"], "microk8s": ["1.33", "1.34"]},
        "default_driver": "580.95.05",
        "recommended_drivers": ["580.95.05"],
        "drivers": ["575", "570.195.03", "550.163.01", "535.274.02"],
        "dra_driver": None,
        "chart_default_driver": {"tag": "v25.10.1", "version": "580.105.08"},
        "kernel_module_type_option": True,
        "service_monitor_default": False,
        "service_monitor_without_crd": "cluster_policy_not_ready",
        "source": {
            "support": _PS % "v25.10",
            "drivers": _LC % "25.10.0",
            "chart_default_driver": _VALUES % "v25.10.1",
            "dra_driver": _NO_DRA,
            "kernel_module_type_option": "values.yaml@v25.10.1 driver.kernelModuleType: auto (gpu-operator.md s2)",
            "service_monitor": _SM,
        },
    },
    "26.3": {
        "kubernetes": ["1.32", "1.36"],
        "os": {
            "ubuntu": ["22.04", "24.04"],
            "rhel": ["8.8", "8.10", "9.2", "9.4", "9.6", "9.7", "10.0", "10.1"],
            "rocky": ["8.10", "9.7", "10.1"],
        },
        "rhcos": ["4.17", "4.21"],
        "containerd": ["1.7", "2.2"],
        "cri_o": True,
        "distributions": {
            "rke2": ["1.32", "1.36"],
            "k3s": ["1.32", "1.36"],
            "k0s": ["1.32", "1.36"],
            "microk8s": ["1.33", "1.35"],
        },
        "default_driver": "580.126.20",
        "recommended_drivers": ["580.159.03", "580.159.04"],
        "drivers": ["595.71.05", "595.58.03", "590.48.01", "570.211.01", "535.309.01"],
        "dra_driver": None,
        "chart_default_driver": {"tag": "v26.3.3", "version": "580.126.20"},
        "kernel_module_type_option": True,
        "service_monitor_default": False,
        "service_monitor_without_crd": "cluster_policy_not_ready",
        "source": {
            "support": _PS % "v26.3",
            "drivers": _LC % "26.3.2",
            "chart_default_driver": _VALUES % "v26.3.3",
            "dra_driver": _NO_DRA,
            "kernel_module_type_option": "values.yaml driver.kernelModuleType: auto (gpu-operator.md s2)",
            "service_monitor": _SM + "; the ~L4802 behaviour is read at v25.10.1 and assumed unchanged in 26.3",
        },
    },
    "26.7": {
        # The matrix cell reads "1.32/1.33-1.36": 1.32 for upstream Kubernetes, 1.33 for the managed services
        # listed beside it. Upstream is what this row describes, so the lower bound is 1.32. 1.37 was added to the
        # list after the release (operator-26-and-dra.md, "Operator releases").
        "kubernetes": ["1.32", "1.37"],
        "os": {
            "ubuntu": ["22.04", "24.04", "26.04"],
            "rhel": ["8.8", "8.10", "9.2", "9.4", "9.6", "9.7", "9.8", "10.0", "10.1", "10.2"],
            "rocky": ["8.10", "9.7", "10.1"],
        },
        "rhcos": ["4.18", "4.22"],
        "containerd": ["1.8", "2.3"],
        "cri_o": True,
        "cri_o_unsupported_os": {"ubuntu": ["26.04"]},
        "distributions": {"eks": ["1.33", "1.36"], "gke": ["1.33", "1.36"]},
        "default_driver": "595.91.07",
        "recommended_drivers": ["595.91.07"],
        "drivers": ["610.57.04", "580.173.02", "535.309.01"],
        "chart_default_driver": {"tag": "v26.7.0", "version": "595.91.07"},
        "dra_driver": "v0.5.0",
        "latest_patch": "26.7.1",
        "kernel_module_type_option": True,
        "service_monitor_default": True,
        "service_monitor_without_crd": "skipped",
        "source": {
            "support": _PS % "v26.7" + "; Kubernetes 1.37 added after release (operator-26-and-dra.md)",
            "drivers": _LC % "26.7.0",
            "latest_patch": "v26.7.1 reported 2026-10 (operator-26-and-dra.md, \"Operator releases\")",
            "chart_default_driver": _VALUES % "v26.7.0",
            "dra_driver": "values.yaml@v26.7.0 draDriver.version: v0.5.0, the kubernetes-sigs/dra-driver-nvidia-gpu"
            ' chart GPUCluster mode deploys (operator-26-and-dra.md, "Operator releases")',
            "kernel_module_type_option": "values.yaml@v26.7.0 driver.kernelModuleType: auto (gpu-operator.md s2)",
            "service_monitor": "values.yaml@v26.7.0 serviceMonitor.enabled: true; v26.7 skips a missing CRD"
            " gracefully (gpu-operator.md s2.1, s10)",
        },
    },
}

_BRANCHES = (
    "docs.nvidia.com/datacenter/tesla/drivers/615/supported-drivers-and-cuda-toolkit-versions.html"
    ' "CUDA and Drivers" (R535, R580, R595, R610); R570 from gpu-operator.md s11 "Branch lifecycle"'
)

#: Driver branch (the major) -> its designation on NVIDIA's data-center driver page. A branch not here is not
#: designated there (the page lists long-term support and production branches, and the current new feature
#: branch). The baseline judges a preinstalled driver by its branch (compat.driver_branches).
DRIVER_BRANCHES = {
    "535": {"designation": "long-term support", "source": _BRANCHES},
    "570": {"designation": "production", "source": _BRANCHES},
    "580": {"designation": "long-term support", "source": _BRANCHES},
    "595": {"designation": "production", "source": _BRANCHES},
    "610": {"designation": "new feature", "source": _BRANCHES},
}

#: NRI plugin mode (``cdi.nriPluginEnabled``, no RuntimeClass and no containerd config edit): the first release
#: with it and the runtimes it needs. Ranges are ``[from, below)`` over full versions (``below`` None: open).
NRI_PLUGIN = {
    "first_release": "26.3",
    "containerd": [["1.7.30", "1.8"], ["2.1", None]],
    "cri_o": {"from": "1.34", "operator_from": "26.3.2"},
    "source": 'operator 26.3.x release notes (operator-26-and-dra.md, "Operator releases"): containerd 1.7.30+,'
    " 2.1 or 2.2; CRI-O from 26.3.2 with CRI-O >= 1.34",
}

_CUDA = "docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html (gpu-operator.md s11)"

#: CUDA major -> the minimum Linux driver under minor-version compatibility, plus the GA driver of a minor
#: where the page names one (a ``.0`` release needs its GA driver for full functionality).
CUDA_DRIVERS = {
    "13": {"minimum": "580", "ga": {"13.0": "580.65.06"}, "source": _CUDA},
    "12": {"minimum": "525", "ga": {"12.0": "525.60.13"}, "source": _CUDA},
    "11": {"minimum": "450.80.02", "ga": {}, "source": _CUDA},
}

_KM = "gpu-operator.md s14 item 13 (open-gpu-kernel-modules#587: the open modules refuse pre-GSP GPUs)"
_KM_OPEN = (
    'gpu-operator.md s11 ("Blackwell and later are only supported by the open kernel modules";'
    " cloud-native-docs PR #6: GH200 needs open) and s14 item 13"
)

#: GPU architecture (as nvidia_gpu_facts names it) -> kernel module flavour. ``module``: ``open``,
#: ``proprietary`` or ``any``; ``required``: false means the other flavour works but is not the one advised.
#: Hopper: s14 advises open for Hopper/Grace; s11 makes it mandatory only for GH200, which NVML reports as
#: ``hopper`` too, so a proprietary module on Hopper is a warning, not a failure.
ARCH_KERNEL_MODULE = {
    "kepler": {"module": "proprietary", "required": True, "source": _KM},
    "maxwell": {"module": "proprietary", "required": True, "source": _KM},
    "pascal": {"module": "proprietary", "required": True, "source": _KM},
    "volta": {"module": "proprietary", "required": True, "source": _KM},
    "turing": {"module": "any", "required": False, "source": _KM},
    "ampere": {"module": "any", "required": False, "source": _KM},
    "ada": {"module": "any", "required": False, "source": _KM},
    "hopper": {"module": "open", "required": False, "source": _KM_OPEN},
    "blackwell": {"module": "open", "required": True, "source": _KM_OPEN},
}

#: ``driver.kernelModuleType=auto`` picks the flavour per GPU only from this driver on; the reference names
#: 570.86.15 and 570.124.06, and a pre-flight takes the later one.
KERNEL_MODULE_TYPE_AUTO_MIN_DRIVER = {
    "version": "570.124.06",
    "source": "values.yaml driver.kernelModuleType comment (gpu-operator.md s2, s14 item 13)",
}

#: containerd release -> the highest config ``version`` it reads ([from, below) over full versions). containerd
#: 1.x stops at 2 ("unsupported config version: 3"); 2.x refuses an imported drop-in whose version is higher than
#: the root config's ("drop-in config version 4 higher than root config version 2").
CONTAINERD_CONFIG_VERSIONS = {
    "ranges": [["0", "2", 2], ["2", "2.3", 3], ["2.3", None, 4]],
    "source": "containerd RELEASES.md (config version 3 from 2.0, version 4 from 2.3.0); NVIDIA/gpu-operator#2060,"
    " NVIDIA/aicr#1688 (the toolkit's drop-in of a newer version than the root config)",
}

#: Precompiled driver images: ``<branch>-<kernel release>-<ID><VERSION_ID>``; from ``os_major_from`` RHEL-like
#: IDs use the major version only (``rhel9``).
PRECOMPILED = {
    "os_major_from": "26.7",
    "os_major_ids": ["rhel", "rocky"],
    "source": "gpu-operator.md s11 (nvidiadriver_types.go:607-688; #690, #1203)",
}
