# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""Module glue: the :class:`.client.K8sClient` for a module's kubeconfig options (the kubeconfig fragment)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.k8s.client import K8sClient
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.k8s.config import load_configuration


def client_from_params(params, retry=None):
    """A :class:`K8sClient` from module params (keys of the kubeconfig fragment; unknown keys ignored)."""
    cfg = load_configuration(
        kubeconfig=params.get("kubeconfig"),
        context=params.get("context"),
        in_cluster=params.get("in_cluster"),
        validate_certs=params.get("validate_certs"),
        host=params.get("host"),
        api_key=params.get("api_key"),
    )
    return K8sClient(cfg, timeout=params.get("api_timeout") or 30, retry=retry)


def module_client(module, retry=None):
    """The :class:`K8sClient` for ``module``'s kubeconfig options.

    The module runner (``_core.module.GpuOpsModule``) has already marked an inline kubeconfig's secrets no_log.
    """
    return client_from_params(module.params, retry=retry)
