# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# The attributes of the collection's modules (check mode, diff mode, platform, facts, action group), described once.
# Every module extends DOCUMENTATION (the descriptions) plus the named fragments that state its support:
#
#   extends_documentation_fragment:
#     - gpuops.gpu_operator.attributes
#     - gpuops.gpu_operator.attributes.INFO_MODULE
#     - gpuops.gpu_operator.attributes.CLUSTER
#
# What a module returns in check or diff mode beyond what a fragment says goes in the module's own notes.
# The action groups are those of meta/runtime.yml; change both together.

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # The descriptions; used together with the fragments below.
    DOCUMENTATION = r"""
options: {}
attributes:
  check_mode:
    description: Can run in C(check_mode) and return changed status prediction without modifying target.
  diff_mode:
    description: Returns details on what has changed (or possibly needs changing in C(check_mode)), when in diff mode.
  platform:
    description: Target OS/families that can be operated against.
"""

    # A module that only reads (an *_info module).
    INFO_MODULE = r"""
options: {}
attributes:
  check_mode:
    support: full
    details:
      - This action does not modify state; check mode returns the same data.
  diff_mode:
    support: N/A
    details:
      - This action does not modify state, so there is no diff.
"""

    FACTS = r"""
options: {}
attributes:
  facts:
    description: Action returns an C(ansible_facts) dictionary that will update existing host facts.
"""

    # A facts module; used together with DOCUMENTATION and FACTS.
    FACTS_MODULE = r"""
options: {}
attributes:
  check_mode:
    support: full
    details:
      - This action only reads; check mode returns the same facts.
  diff_mode:
    support: N/A
    details:
      - This action does not modify state, so there is no diff.
  facts:
    support: full
"""

    # A module that changes the cluster or files: check mode writes nothing and returns what it would do.
    CHECK_MODE_PLAN = r"""
options: {}
attributes:
  check_mode:
    support: full
    details:
      - Writes nothing and returns what it would change; the notes say where.
"""

    # A module that returns a before/after diff in diff mode; the notes say of what.
    DIFF = r"""
options: {}
attributes:
  diff_mode:
    support: full
    details:
      - Returns the state before and after in C(diff); the notes say of what.
"""

    # A module that changes something but returns no diff; the notes say where its changes are reported.
    NO_DIFF = r"""
options: {}
attributes:
  diff_mode:
    support: none
    details:
      - Returns no C(diff); the notes say where its changes are reported.
"""

    # A module that talks to the Kubernetes API only, from any host that reaches it, with the options of the
    # kubeconfig fragment: its platform and its action groups.
    CLUSTER = r"""
options: {}
attributes:
  platform:
    support: full
    platforms: posix
    details:
      - Runs on the host that reaches the Kubernetes API (usually C(localhost)) and reads or changes the cluster only
        through that API.
  action_group:
    description:
      - Use C(group/gpuops.gpu_operator.cluster) in C(module_defaults) to set defaults for this module, for example
        O(kubeconfig) and O(context) once for every module that talks to the cluster.
      - C(group/gpuops.gpu_operator.gpu) sets defaults for every module of the collection.
    support: full
    membership:
      - gpuops.gpu_operator.cluster
      - gpuops.gpu_operator.gpu
"""

    # Reads a GPU host's own files and devices.
    PLATFORM_GPU_HOST = r"""
options: {}
attributes:
  platform:
    support: full
    platforms: linux
    details:
      - Runs on the Linux GPU host, or in a container on it with the host's file system mounted at O(host_root).
"""

    # Works on files of the host it runs on.
    PLATFORM_CONTROLLER = r"""
options: {}
attributes:
  platform:
    support: full
    platforms: posix
    details:
      - Runs where the files are written, usually the controller (a play on C(localhost)); reads nothing from a
        cluster itself.
"""

    ACTIONGROUP_GPU = r"""
options: {}
attributes:
  action_group:
    description: Use C(group/gpuops.gpu_operator.gpu) in C(module_defaults) to set defaults for this module.
    support: full
    membership:
      - gpuops.gpu_operator.gpu
"""
