# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # The user_checks argument shared by the baseline filters (baseline_host, baseline_options, baseline_report);
    # each passes it to _baseline.with_user_checks.
    DOCUMENTATION = r"""
options:
  user_checks:
    description:
      - User checks given apart from the options (the role passes C(gpu_baseline_user_checks) so), so that a
        check's C(failed) template is rendered only when the check is evaluated. Replaces C(user_checks) in the
        options when given.
    type: list
    elements: dict
"""
