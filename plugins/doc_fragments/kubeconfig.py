# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# Options for connecting to the Kubernetes API, shared by every cluster module.
# Mirrors plugins/module_utils/_core/args.py:KUBECONFIG_ARG_SPEC one to one; change both together.

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    DOCUMENTATION = r"""
options:
  kubeconfig:
    description:
      - Path to a kubeconfig file, or the kubeconfig itself as a dictionary.
      - When omitted, the first of E(K8S_AUTH_KUBECONFIG), E(KUBECONFIG) (first entry) and C(~/.kube/config)
        that is set is used; when no such file exists and the module runs inside a pod, the pod's service
        account is used (see O(in_cluster)).
      - Relative certificate paths in a kubeconfig file resolve against the file's directory.
    type: raw
  context:
    description:
      - The kubeconfig context to use. Defaults to the kubeconfig's C(current-context).
      - An unknown context fails with the list of available contexts.
      - Can also be set with E(K8S_AUTH_CONTEXT).
    type: str
  in_cluster:
    description:
      - V(true) forces the in-cluster service account configuration, V(false) forbids it.
      - When omitted, it is used only when no kubeconfig is given or found and the module runs inside a pod.
    type: bool
  host:
    description:
      - URL of the Kubernetes API server, overriding the one from the kubeconfig.
      - Can also be set with E(K8S_AUTH_HOST).
    type: str
  api_key:
    description:
      - Bearer token for the API server, overriding the kubeconfig's credentials.
      - Can also be set with E(K8S_AUTH_API_KEY).
    type: str
  validate_certs:
    description:
      - Whether to verify the API server's TLS certificate. When omitted, the kubeconfig's setting applies.
      - Can also be set with E(K8S_AUTH_VERIFY_SSL).
    type: bool
    aliases: [verify_ssl]
  api_timeout:
    description:
      - Seconds to wait for each API request before it is retried or fails.
    type: int
    default: 30
requirements:
  - kubernetes >= 29.0.0 (Python library)
"""
