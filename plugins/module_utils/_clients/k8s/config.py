# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The client configuration: a kubeconfig file (or dict) and context, or the in-cluster service account."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible.module_utils.basic import missing_required_lib

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.k8s.errors import K8sError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.k8s.library import (
    HAS_KUBERNETES,
    ConfigException,
    k8s_client,
    k8s_config,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.bounded_yaml import load_bounded
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.kubeconfig import (
    MAX_TEXT,
    describe,
    is_text,
    parse_text,
)

#: Environment variables read, in this order, when no kubeconfig is given (kubernetes.core uses the first).
KUBECONFIG_ENV = ("K8S_AUTH_KUBECONFIG", "KUBECONFIG")


def default_kubeconfig_path():
    """The kubeconfig used when none is given: ``$K8S_AUTH_KUBECONFIG``, ``$KUBECONFIG`` (first entry), else
    ``~/.kube/config``."""
    for name in KUBECONFIG_ENV:
        value = os.environ.get(name)
        if value:
            return os.path.expanduser(value.split(os.pathsep)[0])
    return os.path.expanduser("~/.kube/config")


def _in_cluster_available():
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and os.path.exists(
        "/var/run/secrets/kubernetes.io/serviceaccount/token"
    )


def _contexts_of(config_dict):
    return [c.get("name") for c in (config_dict.get("contexts") or []) if isinstance(c, dict)]


def _read_kubeconfig(path):
    """Parse the file ``path`` and return its mapping, or raise K8sError naming the file (never its text)."""
    try:
        with open(path, "rb") as handle:
            text = handle.read(MAX_TEXT + 1)
    except OSError as exc:
        raise K8sError(
            "kubeconfig %r could not be read (%s). Set the kubeconfig option (or K8S_AUTH_KUBECONFIG/KUBECONFIG) "
            "to a readable kubeconfig file." % (path, exc.strerror or exc)
        ) from exc
    data = load_bounded(text, "kubeconfig %r" % path, max_bytes=MAX_TEXT)
    if not isinstance(data, dict):
        raise K8sError(
            "kubeconfig %r is not a kubeconfig (expected a mapping with clusters, users and contexts)." % path
        )
    return data


def load_configuration(kubeconfig=None, context=None, in_cluster=None, validate_certs=None, host=None, api_key=None):
    """Return a ``kubernetes.client.Configuration`` for the given inputs.

    ``kubeconfig`` is a path, a kubeconfig's YAML text or an already-parsed dict; messages name the path or the
    kind of inline kubeconfig, never its text. Without it the default kubeconfig is used when it
    exists, otherwise the in-cluster service account (``in_cluster=None`` means "when available";
    ``True`` forces it, ``False`` forbids it). ``context`` picks a kubeconfig context; an unknown one is an
    error that lists the available contexts. ``host``/``api_key``/``validate_certs`` override the result.
    """
    if not HAS_KUBERNETES:
        raise K8sError(missing_required_lib("kubernetes"))
    cfg = k8s_client.Configuration()
    source = None
    if in_cluster is True:
        source = "in-cluster"
    elif kubeconfig is None:
        path = default_kubeconfig_path()
        if os.path.exists(path):
            kubeconfig = path
        elif in_cluster is not False and _in_cluster_available():
            source = "in-cluster"
        elif host is None:
            raise K8sError(
                "no kubeconfig found at %r and not running inside a cluster. Set the kubeconfig option "
                "(or K8S_AUTH_KUBECONFIG/KUBECONFIG) to a kubeconfig file." % path
            )
    if source == "in-cluster":
        try:
            k8s_config.load_incluster_config(client_configuration=cfg)
        except ConfigException as exc:
            raise K8sError(
                "in-cluster configuration failed (%s). Run inside a pod with a service account token, or set the "
                "kubeconfig option." % exc
            ) from exc
    elif kubeconfig is not None:
        label = describe(kubeconfig)
        if isinstance(kubeconfig, dict):
            data = kubeconfig
        elif is_text(kubeconfig):
            data = kubeconfig = parse_text(kubeconfig)
        else:
            label = os.path.expanduser(str(kubeconfig))
            data = _read_kubeconfig(label)
        names = _contexts_of(data)
        if context is not None and context not in names:
            raise K8sError(
                "context %r is not in kubeconfig %s (available: %s). Set context to one of those, or omit it to use "
                "current-context." % (context, label, ", ".join(sorted(n for n in names if n)) or "none")
            )
        if context is None and not data.get("current-context"):
            raise K8sError(
                "kubeconfig %s has no current-context. Set the context option (available: %s)."
                % (label, ", ".join(sorted(n for n in names if n)) or "none")
            )
        try:
            if isinstance(kubeconfig, dict):
                k8s_config.load_kube_config_from_dict(
                    config_dict=data, context=context, client_configuration=cfg, persist_config=False
                )
            else:  # from the file, so that relative certificate paths resolve against its directory
                k8s_config.load_kube_config(
                    config_file=label, context=context, client_configuration=cfg, persist_config=False
                )
        except (ConfigException, ValueError, TypeError, KeyError) as exc:
            raise K8sError(
                "kubeconfig %s (context %r) could not be used: %s. Fix that entry of the kubeconfig or pick "
                "another context." % (label, context or data.get("current-context"), exc)
            ) from exc
    if host:
        cfg.host = host
    if api_key:
        cfg.api_key = {"authorization": "Bearer %s" % api_key}
    if validate_certs is not None:
        cfg.verify_ssl = bool(validate_certs)
    return cfg
