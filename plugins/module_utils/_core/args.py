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

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.errors import ArgumentError

KUBECONFIG_ARG_SPEC = dict(
    kubeconfig=dict(type="raw"),
    context=dict(type="str", fallback=(env_fallback, ["K8S_AUTH_CONTEXT"])),
    in_cluster=dict(type="bool"),
    host=dict(type="str", fallback=(env_fallback, ["K8S_AUTH_HOST"])),
    api_key=dict(type="str", no_log=True, fallback=(env_fallback, ["K8S_AUTH_API_KEY"])),
    validate_certs=dict(type="bool", aliases=["verify_ssl"], fallback=(env_fallback, ["K8S_AUTH_VERIFY_SSL"])),
    api_timeout=dict(type="int", default=30),
)

#: Remediation markers beyond the known ones (``_clients.quarantine``). Mirrors ``plugins/doc_fragments/quarantine.py``
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

#: Keys of a kubeconfig ``users[].user`` entry whose values are secrets.
SECRET_USER_KEYS = ("token", "password", "client-key-data", "client-certificate-data")


def kubeconfig_secrets(kubeconfig):
    """Secret strings in an inline kubeconfig dict (tokens, passwords, key data), for ``module.no_log_values``.

    Anything that is not such a dict (a path, None, a wrong type) holds no secret and gives an empty set.
    """
    if not isinstance(kubeconfig, dict):
        return set()
    found = set()
    users = kubeconfig.get("users")
    for entry in users if isinstance(users, list) else []:
        user = (entry or {}).get("user") if isinstance(entry, dict) else None
        if isinstance(user, dict):
            found.update(str(user[k]) for k in SECRET_USER_KEYS if user.get(k))
    return found


def check_minimums(params, minimums):
    """Raise :class:`ArgumentError` naming the first option in ``minimums`` (``{name: least}``) that is below its
    least allowed value (options left unset are not checked)."""
    for name, least in minimums.items():
        value = params.get(name)
        if value is not None and value < least:
            raise ArgumentError("%s must be at least %s, got %s" % (name, least, value))
