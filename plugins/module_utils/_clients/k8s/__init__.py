# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""Kubernetes API access shared by the collection's modules; callers import from here.

* :mod:`.library` - the kubernetes Python library, imported once (:data:`KUBERNETES`, the module requirement);
* :mod:`.config` - the client configuration from a kubeconfig file (or dict), a context, or the in-cluster
  service account (:func:`load_configuration`);
* :mod:`.errors` - :class:`K8sError`, with messages that name the input and the fix;
* :mod:`.retry` - :class:`RetryPolicy`: bounded exponential backoff with full jitter, honouring ``Retry-After``;
* :mod:`.transport` - one request of any verb returning parsed JSON without the kubernetes model layer (much
  faster for big LISTs), retried on 429, 5xx and connection errors, every request counted;
* :mod:`.client` - :class:`K8sClient`: paginated LISTs (``limit``/``continue``), server-side apply, pods;
* :mod:`.discovery` - every resource the API server serves (:func:`api_resources`), as helm's ``.Capabilities``
  (:func:`helm_api_versions`), and an object's URL path (:func:`object_path`);
* :mod:`.module` - the client for a module's kubeconfig options (:func:`module_client`, :func:`client_from_params`).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.k8s.client import K8sClient
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.k8s.config import (
    default_kubeconfig_path,
    load_configuration,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.k8s.discovery import (
    api_resources,
    helm_api_versions,
    object_path,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.k8s.errors import K8sError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.k8s.library import KUBERNETES
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.k8s.module import (
    client_from_params,
    module_client,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.k8s.retry import RetryPolicy

__all__ = (
    "KUBERNETES",
    "K8sClient",
    "K8sError",
    "RetryPolicy",
    "api_resources",
    "client_from_params",
    "default_kubeconfig_path",
    "helm_api_versions",
    "load_configuration",
    "module_client",
    "object_path",
)
