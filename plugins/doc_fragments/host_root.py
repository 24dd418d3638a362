# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

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
    type: path
    default: /
"""
