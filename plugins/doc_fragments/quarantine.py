# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# The markers of fault-remediation systems beyond the known ones, shared by the modules that name foreign quarantine.
# Mirrors plugins/module_utils/_core/args.py:QUARANTINE_ARG_SPEC one to one; change both together.

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    DOCUMENTATION = r"""
options:
  quarantine_markers:
    description:
      - Markers of fault-remediation systems beyond the known ones of NVSentinel and node-problem-detector (the
        collection's docs/canary-upgrade.md lists them), for example your own remediator's taint. A GPU node that
        carries one, or a cordon the operator's upgrade controller does not hold, is foreign-quarantined.
    type: list
    elements: dict
    default: []
    suboptions:
      kind:
        description: Where the marker is - a taint key, an annotation key, or a node condition type (with status
          V(True)).
        type: str
        required: true
        choices: [taint, annotation, condition]
      key:
        description: The taint key, annotation key or condition type.
        type: str
        required: true
      owner:
        description: Who owns a node that carries it (named in the evidence).
        type: str
        default: user-listed
"""
