# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # The host_root option shared by the host fact modules.
    DOCUMENTATION = r"""
options:
  host_root:
    description:
      - Where the host's file system is mounted; every path is read below it.
      - Use V(/host) when running from a container with the host mounted at C(/host).
      - It must be a directory with C(proc), C(sys) or C(etc) in it; the task fails otherwise, naming the path.
    type: path
    default: /
"""
