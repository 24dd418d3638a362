# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""Argument spec of the release, chart and helm options; mirrors ``plugins/doc_fragments/helm.py`` one to one."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

HELM_ARG_SPEC = dict(
    release_name=dict(type="str", default="gpu-operator", aliases=["name"]),
    release_namespace=dict(type="str", default="gpu-operator", aliases=["namespace"]),
    chart_ref=dict(type="str"),
    chart_repo_url=dict(type="str"),
    chart_version=dict(type="str"),
    chart_repo_username=dict(type="str"),
    chart_repo_password=dict(type="str", no_log=True),
    values=dict(type="dict", default={}),
    values_files=dict(type="list", elements="path", default=[]),
    fleet=dict(type="dict"),
    detect=dict(type="bool", default=True),
    force_conflicts=dict(type="bool", default=True),
    wait=dict(type="bool", default=True),
    timeout=dict(type="int", default=600),
    create_namespace=dict(type="bool", default=False),
    helm_binary=dict(type="path"),
)
