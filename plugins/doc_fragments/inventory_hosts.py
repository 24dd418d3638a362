# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # The host variables that join an inventory GPU host with its Kubernetes node, for the filters that read hostvars.
    DOCUMENTATION = r"""
options:
  node_name_var:
    description: The host variable holding the Kubernetes node name; a host without it is named after itself.
    type: str
    default: k8s_node_name
  pool_var:
    description: The host variable holding the host's pool; null for a host without it.
    type: str
    default: gpu_pool
"""

    # The input of a filter applied to hostvars.
    HOSTVARS = r"""
options:
  _input:
    description: C(hostvars), or any mapping of inventory host name to its variables.
    type: dict
    required: true
"""
