# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change incompatibly at any
# time, without notice; do not use it from other collections.

"""Argument spec for the Kubernetes connection options.

Mirrors ``plugins/doc_fragments/kubeconfig.py`` one to one; change both together. Modules copy it and add
their own options::

    spec = dict(KUBECONFIG_ARG_SPEC)
    spec.update(name=dict(type="str", required=True))
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.module_utils.basic import env_fallback

KUBECONFIG_ARG_SPEC = dict(
    kubeconfig=dict(type="raw"),
    context=dict(type="str", fallback=(env_fallback, ["K8S_AUTH_CONTEXT"])),
    in_cluster=dict(type="bool"),
    host=dict(type="str", fallback=(env_fallback, ["K8S_AUTH_HOST"])),
    api_key=dict(type="str", no_log=True, fallback=(env_fallback, ["K8S_AUTH_API_KEY"])),
    validate_certs=dict(type="bool", aliases=["verify_ssl"], fallback=(env_fallback, ["K8S_AUTH_VERIFY_SSL"])),
    api_timeout=dict(type="int", default=30),
)

#: Remediation markers beyond the known ones (``_view.quarantine``). Mirrors ``plugins/doc_fragments/quarantine.py``
#: one to one; change both together.
QUARANTINE_ARG_SPEC = dict(
    quarantine_markers=dict(
        type="list",
        elements="dict",
        default=[],
        options=dict(
            kind=dict(type="str", required=True, choices=["taint", "annotation", "condition"]),
            key=dict(type="str", required=True, no_log=False),
            owner=dict(type="str", default="user-listed"),
        ),
    ),
)

#: The operator's names, discovered when unset (``_clients.operator_names``). Mirrors
#: ``plugins/doc_fragments/operator_names.py`` one to one; change both together.
OPERATOR_NAMES_ARG_SPEC = dict(
    operator_namespace=dict(type="str"),
    cluster_policy=dict(type="str"),
)
