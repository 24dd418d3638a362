#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: nvidia_gpu_facts
short_description: Gather NVIDIA GPU facts through NVML
description:
  - Reads driver, NVML and CUDA driver versions and per-GPU identity, memory, MIG, ECC, retired pages, remapped
    rows, thermal, power, clock event reasons, PCIe and fabric state through nvidia-ml-py (C(pynvml)).
  - Finds C(libnvidia-ml.so.1) at O(library_path), else on the normal library path, else under
    O(host_root)/O(driver_root) (the GPU Operator's driver root).
  - Never fails because of NVML errors. A missing library, an unloaded driver, a driver/library mismatch or
    missing permissions give RV(ansible_facts.nvidia_gpu.available=false) with a reason code and a hint; a lost
    GPU gives an error entry on that GPU. An unsupported field is V(null).
  - Each GPU carries a health verdict (V(ok), V(warning) or V(critical)) with reasons.
author:
  - gpuops.gpu_operator contributors (@gpuops)
requirements:
  - nvidia-ml-py (module C(pynvml)) on the managed host
options:
  library_path:
    description:
      - Full path of the NVML library to load. Skips the search.
    type: path
  driver_root:
    description:
      - Driver root searched (relative to O(host_root)) when the library is not on the library path.
      - Library directories tried below it are C(usr/lib64), C(usr/lib/x86_64-linux-gnu),
        C(usr/lib/aarch64-linux-gnu), C(usr/lib) and C(lib64).
    type: path
    default: /run/nvidia/driver
  host_root:
    description:
      - Where the host's file system is mounted, for example V(/host) in a container.
    type: path
    default: /
  require_gpus:
    description:
      - Fail the task when NVML is unavailable, no GPU is found, or a GPU reports an error.
    type: bool
    default: false
extends_documentation_fragment:
  - gpuops.gpu_operator.attributes
  - gpuops.gpu_operator.attributes.FACTS
  - gpuops.gpu_operator.attributes.FACTS_MODULE
  - gpuops.gpu_operator.attributes.PLATFORM_GPU_HOST
  - gpuops.gpu_operator.attributes.ACTIONGROUP_GPU
notes:
  - Reads only; safe in check mode.
  - The facts are RV(ansible_facts.nvidia_gpu).
seealso:
  - module: gpuops.gpu_operator.gpu_host_facts
"""

EXAMPLES = r"""
- name: Gather GPU facts
  gpuops.gpu_operator.nvidia_gpu_facts:

- name: Gather GPU facts from a container with the host at /host and the operator-managed driver
  gpuops.gpu_operator.nvidia_gpu_facts:
    host_root: /host
    driver_root: /run/nvidia/driver

- name: Fail when the node has no usable GPU
  gpuops.gpu_operator.nvidia_gpu_facts:
    require_gpus: true

- name: Show GPUs that need attention
  ansible.builtin.debug:
    msg: "{{ ansible_facts.nvidia_gpu.gpus | selectattr('health.status', 'ne', 'ok') | list }}"
"""

RETURN = r"""
ansible_facts:
  description: Facts added to the host.
  returned: always
  type: dict
  contains:
    nvidia_gpu:
      description: NVML facts.
      returned: always
      type: dict
      contains:
        available:
          description: Whether NVML could be initialised.
          type: bool
          returned: always
          sample: true
        reason:
          description:
            - Why NVML is unavailable; V(null) when available.
            - One of V(library_not_found), V(driver_not_loaded), V(driver_library_mismatch),
              V(no_permission), V(gpu_lost), V(unknown) or V(nvml_error_<code>).
          type: str
          returned: always
          sample: driver_not_loaded
        hint:
          description: How to fix RV(ansible_facts.nvidia_gpu.reason).
          type: str
          returned: always
        library_path:
          description: The library that was loaded (V(libnvidia-ml.so.1) when found by soname).
          type: str
          returned: always
        driver_version:
          description: Driver version reported by NVML.
          type: str
          returned: always
          sample: 570.124.06
        nvml_version:
          description: NVML library version.
          type: str
          returned: always
          sample: 12.570.124.06
        cuda_driver_version:
          description: Highest CUDA version the driver supports, as C(major.minor).
          type: str
          returned: always
          sample: "12.8"
        gpu_count:
          description: Number of GPUs NVML reports.
          type: int
          returned: always
          sample: 8
        health:
          description: Worst per-GPU verdict (V(ok), V(warning), V(critical)); V(null) when unavailable.
          type: str
          returned: always
          sample: ok
        gpus:
          description:
            - One entry per GPU. Fields a GPU does not support are V(null).
            - Keys C(index), C(name), C(uuid), C(serial), C(pci_bus_id), C(pci_device_id) (C(0xDDDDVVVV)),
              C(architecture) (V(turing), V(ampere), V(ada), V(hopper), ...), C(compute_capability),
              C(memory_total_bytes), C(memory_used_bytes), C(mig) (C(current), C(pending), C(max_devices),
              C(devices) with C(index), C(uuid), C(memory_total_bytes)), C(ecc) (C(current), C(pending),
              C(volatile_corrected), C(volatile_uncorrected), C(aggregate_corrected), C(aggregate_uncorrected)),
              C(retired_pages) (C(single_bit), C(double_bit), C(pending)), C(remapped_rows) (C(corrected),
              C(uncorrected), C(pending), C(failure)), C(temperature_c), C(power_usage_w), C(power_limit_w),
              C(persistence_mode), C(compute_mode), C(clock_event_reasons) (decoded names),
              C(clock_event_reasons_mask), C(pcie_generation), C(pcie_width), C(vbios_version), C(fabric)
              (C(state), C(status), C(clique_id); V(null) when unsupported).
            - C(health) is C({status, reasons}); C(error) (C(reason), C(code), C(hint)) is present when the GPU
              failed (for example V(gpu_lost)); C(field_errors) lists fields that failed with other errors.
          type: list
          elements: dict
          returned: always
"""

import traceback

try:
    import pynvml

    HAS_PYNVML = True
    PYNVML_IMP_ERR = None
except ImportError:
    HAS_PYNVML = False
    PYNVML_IMP_ERR = traceback.format_exc()

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.nvml import collect, require_gpus_problem
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.errors import GpuOpsError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.module import Requirement, run_module


def argspec():
    return dict(
        library_path=dict(type='path'),
        driver_root=dict(type='path', default='/run/nvidia/driver'),
        host_root=dict(type='path', default='/'),
        require_gpus=dict(type='bool', default=False),
    )


def execute_module(module):
    p = module.params
    facts = collect(pynvml, p['library_path'], p['host_root'], p['driver_root'])
    problem = require_gpus_problem(facts) if p['require_gpus'] else None
    if problem:
        raise GpuOpsError(problem, details=dict(ansible_facts=dict(nvidia_gpu=facts)))
    return dict(ansible_facts=dict(nvidia_gpu=facts))


def main():
    run_module(
        argspec(),
        execute_module,
        requirements=[Requirement('nvidia-ml-py', HAS_PYNVML, PYNVML_IMP_ERR)],
        supports_check_mode=True,
    )


if __name__ == '__main__':
    main()
