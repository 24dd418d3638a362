# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The options of a canary run, built once from gpu_canary_upgrade's arguments and named as they are."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from dataclasses import dataclass, fields
from typing import Optional, Sequence

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.names import DEFAULT_TAINT_KEY


@dataclass(frozen=True)
class CanaryOptions:
    """What :class:`.session.CanarySession` (the record, the taint, the waits) and :func:`.plan.plan` (the target,
    the canary pool and the waves, the gate's limits) read."""

    record_name: str = "gpuops-canary-upgrade"
    cluster_policy: Optional[str] = None
    taint_key: str = DEFAULT_TAINT_KEY
    taint_effect: str = "NoSchedule"
    poll_interval: float = 2.0
    page_size: int = 2000
    progress_interval: Optional[float] = None
    continue_wait: bool = False
    driver_version: Optional[str] = None
    chart_version: Optional[str] = None
    chart_values: Optional[dict] = None
    canary_nodes: Sequence[str] = ()
    canary_selector: str = ""
    waves: Sequence = ("100%",)
    exclude: Sequence[str] = ()
    wait_for_completion_selector: str = ""
    cuda_images: Sequence[dict] = ()
    upgrade_policy: Optional[dict] = None
    foreign_quarantine: str = "skip"
    quarantine_markers: Sequence = ()
    eviction: str = "evict"
    max_evicted_workloads: Optional[int] = None

    @classmethod
    def from_params(cls, params):
        """The options of a gpu_canary_upgrade task (``progress_interval`` 0: wait until a wait ends)."""
        options = {field.name: params[field.name] for field in fields(cls) if field.name != "page_size"}
        options["progress_interval"] = params["progress_interval"] or None
        return cls(**options)
