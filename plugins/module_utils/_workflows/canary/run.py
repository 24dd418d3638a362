# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""One canary run: :class:`Canary` is the session with every step of the module as a method.

The steps live in their own modules (:mod:`.plan`, :mod:`.prepare`, :mod:`.wave`, :mod:`.rollback`, :mod:`.status`)
as functions of a :class:`.session.CanarySession`; this class only binds them (:mod:`.steps` runs them for the
module).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.operator_names import discover
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary import plan as plan_step
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary import prepare as prepare_step
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary import rollback as rollback_step
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary import status as status_step
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary import wave as wave_step
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.options import CanaryOptions
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.session import CanarySession
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.steps import check_step


class Canary(CanarySession):
    """The canary upgrade over one API client (the constructor is :class:`.session.CanarySession`'s)."""

    plan = plan_step.plan
    prepare = prepare_step.prepare
    run_wave = wave_step.run_wave
    finish_wave = wave_step.finish_wave
    abort = wave_step.abort
    rollback = rollback_step.rollback
    status = status_step.status


def canary_for(client, p, **kwargs):
    """``(canary, names)`` for the module's parameters ``p``: the step's options checked before any request, then a
    :class:`Canary` with the :class:`.CanaryOptions` of ``p`` in the operator namespace found from
    ``operator_namespace`` and ``cluster_policy`` (None: discover; ``_clients.operator_names``) and the
    :class:`.OperatorNames`; ``kwargs``: check mode and clock."""
    check_step(p)
    names = discover(client, p["operator_namespace"], p["cluster_policy"])
    return Canary(client, names.namespace, CanaryOptions.from_params(p), **kwargs), names
