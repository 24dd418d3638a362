# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The GPU Operator release life cycle behind the ``gpu_operator`` module; callers import from here.

* :mod:`.params` - :class:`ReleaseParams`, the one params object (built from module params), and the kubeconfig
  helm is given (:func:`helm_kubeconfig`);
* :mod:`.gates` - version gates per the GPU Operator life-cycle policy (:func:`version_gate`) and CRDs that would
  lose fields (:func:`crd_gate`);
* :mod:`.crds` - what applying the target chart's CRDs changes (:func:`crd_changes`), whether another owner manages
  a CRD (:func:`other_owner`), and the CRD writes;
* :mod:`.diffs` - the values paths a plan changes (:func:`value_changes`) and the ``--diff`` output;
* :mod:`.readiness` - the ClusterPolicy readiness (only once the operator observed the current spec) and its
  bounded wait;
* :mod:`.recovery` - after a failed helm write: what helm wrote, and the rollback to the revision deployed before;
* :mod:`.lifecycle` - :class:`OperatorRelease`: plan, install or upgrade, uninstall;
* :mod:`.errors` - :class:`ReleaseError`.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.release.crds import (
    crd_changes,
    other_owner,
    schema_fields,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.release.diffs import value_changes
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.release.errors import ReleaseError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.release.gates import (
    crd_gate,
    version_gate,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.release.lifecycle import OperatorRelease
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.release.params import (
    ReleaseParams,
    helm_kubeconfig,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.release.readiness import (
    observed_generation,
    stale_status,
)

__all__ = (
    "OperatorRelease",
    "ReleaseError",
    "ReleaseParams",
    "crd_changes",
    "crd_gate",
    "helm_kubeconfig",
    "observed_generation",
    "other_owner",
    "schema_fields",
    "stale_status",
    "value_changes",
    "version_gate",
)
