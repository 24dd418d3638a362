# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# Release, chart and helm options of the gpu_operator module.
# Mirrors plugins/module_utils/_clients/helm/args.py:HELM_ARG_SPEC one to one; change both together.

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    DOCUMENTATION = r"""
options:
  release_name:
    description: Name of the Helm release.
    type: str
    default: gpu-operator
    aliases: [name]
  release_namespace:
    description: Namespace of the Helm release (where Helm keeps its release Secrets and the operator runs).
    type: str
    default: gpu-operator
    aliases: [namespace]
  chart_ref:
    description:
      - The chart. With O(chart_repo_url), the chart name in that repository (V(gpu-operator)); otherwise an
        C(oci://) reference or the path of a chart directory or C(.tgz).
      - Required with O(state=present).
    type: str
  chart_repo_url:
    description:
      - URL of the Helm chart repository, for example V(https://helm.ngc.nvidia.com/nvidia).
      - It is added to a private, temporary repository config; the user's C(helm repo) setup is not used or changed.
      - An unreachable URL fails with a message naming it.
    type: str
  chart_version:
    description:
      - Chart version with its V(v) prefix, for example V(v26.7.0). Defaults to the newest the repository offers.
      - An unknown version fails with a message naming it.
    type: str
  chart_repo_username:
    description: User name for the chart repository or OCI registry.
    type: str
  chart_repo_password:
    description:
      - Password or token for the chart repository or OCI registry. Passed to helm on standard input
        (C(--password-stdin)), never on a command line.
    type: str
  values:
    description: Chart values. They win over O(values_files) and over every synthesised value.
    type: dict
    default: {}
  values_files:
    description: YAML files of chart values, merged in order (later wins), below O(values).
    type: list
    elements: path
    default: []
  fleet:
    description:
      - Values synthesised from host facts and inventory, the output of the C(gpuops.gpu_operator.operator_values)
        filter. Its C(values) (C(driver.enabled), C(toolkit.env)) apply below the user's values, and tolerations for
        its C(taints) are added to the chart's default C(daemonsets.tolerations) and
        C(node-feature-discovery.worker.tolerations).
    type: dict
  detect:
    description:
      - Synthesise values from the cluster - C(nfd.enabled=false) when nodes already carry
        C(feature.node.kubernetes.io/) labels at install time (kept afterwards), and
        C(dcgmExporter.serviceMonitor.enabled) set to whether the C(servicemonitors.monitoring.coreos.com) CRD exists.
    type: bool
    default: true
  force_conflicts:
    description:
      - With helm v4 (server-side apply), pass C(--force-conflicts) so the chart takes back fields another field
        manager changed. Ignored with helm v3, whose three-way merge overwrites them anyway.
    type: bool
    default: true
  wait:
    description: Pass C(--wait) to helm (install, upgrade, rollback and uninstall).
    type: bool
    default: true
  timeout:
    description: Seconds helm may take for one install, upgrade, rollback or uninstall (C(--timeout)).
    type: int
    default: 600
  create_namespace:
    description: Let helm create O(release_namespace) when it does not exist (C(--create-namespace)).
    type: bool
    default: false
  helm_binary:
    description: Path of the helm v3 or v4 binary; by default C(helm) on E(PATH).
    type: path
requirements:
  - helm v3 or v4 (the CLI)
"""
