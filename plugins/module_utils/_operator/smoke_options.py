# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The options of a GPU smoke test, built once from gpu_smoke_test's arguments: the modes (what a pod runs and
the text its log must contain) and :class:`SmokeOptions`, which ``smoke.pod_spec`` and ``smoke.SmokeRun`` read."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from dataclasses import dataclass
from typing import Optional, Sequence, Union

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.cluster_view import GPU_RESOURCE

#: What each mode runs and the text its log must contain. The vectoradd sample prints "Test PASSED" after it
#: has added two vectors on the GPU; ``nvidia-smi -L`` prints one "GPU <index>: <name> (UUID: ...)" line per GPU.
MODES = {
    "vectoradd": {
        "image": "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0",
        "command": None,
        "expected_output": "Test PASSED",
    },
    "nvidia-smi": {
        "image": "nvcr.io/nvidia/cuda:12.5.0-base-ubuntu22.04",
        "command": ["nvidia-smi", "-L"],
        "expected_output": "GPU 0:",
    },
}

#: Tolerations when none are given: the taint GPU pools commonly carry.
DEFAULT_TOLERATIONS = ({"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"},)


@dataclass(frozen=True)
class SmokeOptions:
    """What a run does, from gpu_smoke_test's arguments (:meth:`from_params`): the pod each node gets
    (``smoke.pod_spec``) and how ``smoke.SmokeRun`` runs and watches those pods."""

    image: str
    command: Optional[Sequence[str]] = None
    args: Optional[Sequence[str]] = None
    gpus: Union[int, str] = 1
    resource: str = GPU_RESOURCE
    tolerations: Optional[Sequence[dict]] = DEFAULT_TOLERATIONS
    timeout: float = 300
    pod_labels: Optional[dict] = None
    runtime_class_name: Optional[str] = None
    image_pull_secrets: Optional[Sequence[str]] = None
    namespace: str = "default"
    concurrency: int = 10
    schedule_timeout: float = 60
    poll_interval: float = 1.0
    expected_output: Optional[str] = None
    collect_logs: bool = True
    cleanup_timeout: float = 60
    page_size: int = 2000
    workers: int = 4

    @classmethod
    def from_params(cls, params):
        """The options of a gpu_smoke_test task; its ``mode`` fills in ``image``, ``command`` and ``expected_output``
        where they are not set."""
        mode = MODES[params["mode"]]
        expected = params["expected_output"] if params["expected_output"] is not None else mode["expected_output"]
        return cls(
            image=params["image"] or mode["image"],
            command=params["command"] if params["command"] is not None else mode["command"],
            gpus=params["gpus"],
            resource=params["resource"],
            tolerations=params["tolerations"] if params["tolerations"] is not None else DEFAULT_TOLERATIONS,
            timeout=params["timeout"],
            pod_labels=params["pod_labels"],
            runtime_class_name=params["runtime_class_name"],
            image_pull_secrets=params["image_pull_secrets"],
            namespace=params["namespace"],
            concurrency=params["concurrency"],
            schedule_timeout=params["schedule_timeout"],
            poll_interval=params["poll_interval"],
            expected_output=expected or None,
            collect_logs=params["collect_logs"],
        )
