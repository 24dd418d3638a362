# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The helm CLI (v3 and v4); callers import from here.

* :mod:`.args` - :data:`HELM_ARG_SPEC`, the release, chart and helm options;
* :mod:`.chart` - :class:`ChartRef`: a repository URL + chart name, an ``oci://`` reference, or a local path;
  the CRD files of a chart and of the subcharts a set of values enables (helm's ``condition`` and ``tags``);
* :mod:`.cli` - the binary behind one ``run_command`` funnel: version detection, ``show chart|values``, the
  chart's CRDs for given values;
* :mod:`.releases` - :class:`Helm`: ``get metadata|values|manifest``, ``history`` (with each revision's chart
  version), ``template`` and ``upgrade --install`` of a :class:`ReleaseSpec`, ``rollback``, ``uninstall``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.helm.args import HELM_ARG_SPEC
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.helm.chart import REPO_ALIAS, ChartRef
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.helm.cli import HelmError, parse_version
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.helm.releases import Helm, ReleaseSpec

__all__ = ("HELM_ARG_SPEC", "REPO_ALIAS", "ChartRef", "Helm", "HelmError", "ReleaseSpec", "parse_version")
