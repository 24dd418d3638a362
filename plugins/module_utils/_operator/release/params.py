# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The one params object of the life cycle, and the kubeconfig helm is given."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.helm import ChartRef
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.k8s import default_kubeconfig_path
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.bounded_yaml import MAX_BYTES, load_bounded
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.kubeconfig import is_text
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.release.errors import ReleaseError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.values import deep_merge


class ReleaseParams:
    """Everything the life cycle needs, from the module's params and its check and diff modes (one object, never
    loose arguments)."""

    FIELDS = (
        "state",
        "release_name",
        "release_namespace",
        "chart_ref",
        "chart_repo_url",
        "chart_version",
        "chart_repo_username",
        "chart_repo_password",
        "values",
        "values_files",
        "fleet",
        "mode",
        "detect",
        "force",
        "rollback_on_failure",
        "force_conflicts",
        "wait",
        "timeout",
        "ready_timeout",
        "remove_crds",
        "create_namespace",
        "helm_binary",
        "kubeconfig",
        "context",
    )

    def __init__(self, check_mode=False, diff=False, **kwargs):
        self.check_mode = check_mode
        self.diff = diff
        for name in self.FIELDS:
            setattr(self, name, kwargs.get(name))
        self.values = self.values or {}
        self.values_files = self.values_files or []
        self.rollback_on_failure = self.rollback_on_failure is not False

    @classmethod
    def from_module(cls, module):
        """The module's params, with its check mode and diff mode."""
        fields = {k: module.params.get(k) for k in cls.FIELDS}
        return cls(check_mode=module.check_mode, diff=module._diff, **fields)

    def chart(self):
        try:
            return ChartRef(self.chart_ref, self.chart_repo_url)
        except ValueError as exc:
            raise ReleaseError(str(exc)) from exc

    def user_values(self):
        """``values_files`` in order, then ``values`` on top (the user's explicit values)."""
        merged = {}
        for path in self.values_files:
            try:
                with open(os.path.expanduser(path), "rb") as handle:
                    text = handle.read(MAX_BYTES + 1)
            except OSError as exc:
                raise ReleaseError("values_files entry %s could not be read: %s" % (path, exc.strerror or exc)) from exc
            data = load_bounded(text, "values_files entry %s" % path) or {}
            if not isinstance(data, dict):
                raise ReleaseError("values_files entry %s is not a mapping of chart values" % path)
            merged = deep_merge(merged, data)
        return deep_merge(merged, self.values)


def helm_kubeconfig(kubeconfig, tmpdir):
    """A kubeconfig path for helm: the given path, an inline mapping or text written 0600 to ``tmpdir`` (removed
    with it on every exit, signals included: ``_core.module.run_module``), or the default."""
    if isinstance(kubeconfig, dict) or is_text(kubeconfig):
        path = os.path.join(tmpdir, "kubeconfig")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            if isinstance(kubeconfig, dict):
                json.dump(kubeconfig, handle)
            else:
                handle.write(kubeconfig)
        return path
    if kubeconfig:
        return os.path.expanduser(str(kubeconfig))
    path = default_kubeconfig_path()
    return path if os.path.exists(path) else None
