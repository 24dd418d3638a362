# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# The operator's names (namespace and ClusterPolicy), discovered unless given, shared by every module that reads the
# operator. Mirrors plugins/module_utils/_core/args.py:OPERATOR_NAMES_ARG_SPEC one to one; change both together.

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    DOCUMENTATION = r"""
options:
  operator_namespace:
    description:
      - Namespace of the GPU Operator and its operand pods, for example V(nvidia-gpu-operator) on OpenShift.
      - When omitted it is discovered - the ClusterPolicy's C(status.namespace), else the namespace of the pods
        labelled C(app.kubernetes.io/component=gpu-operator) (one LIST of pods in every namespace), else an
        NVIDIADriver's C(status.namespace), else V(gpu-operator) with a problem in the returned C(operator) saying
        it was not found.
      - A value that differs from the namespace the ClusterPolicy reports is used, with a problem saying so.
    type: str
  cluster_policy:
    description:
      - Name of the ClusterPolicy to act on, for example V(gpu-cluster-policy) on OpenShift.
      - When omitted it is the one the operator reconciles - one that is not C(ignored), then the oldest, then by
        name (the operator reconciles the oldest and marks the others C(ignored)).
      - A name that matches no ClusterPolicy fails before any write.
    type: str
"""
