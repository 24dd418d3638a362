# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The kubernetes Python library (and its urllib3), imported once; the names are None when it is missing."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import traceback

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.module import Requirement

try:
    import urllib3
    from kubernetes import client as k8s_client
    from kubernetes import config as k8s_config
    from kubernetes.config.config_exception import ConfigException

    HAS_KUBERNETES = True
    KUBERNETES_IMPORT_ERROR = None
except ImportError:
    HAS_KUBERNETES = False
    KUBERNETES_IMPORT_ERROR = traceback.format_exc()
    urllib3 = k8s_client = k8s_config = None

    class ConfigException(Exception):  # type: ignore
        pass


__all__ = ["HAS_KUBERNETES", "KUBERNETES", "ConfigException", "k8s_client", "k8s_config", "urllib3"]

#: The kubernetes Python library, for ``run_module(requirements=...)``.
KUBERNETES = Requirement("kubernetes", HAS_KUBERNETES, KUBERNETES_IMPORT_ERROR)
