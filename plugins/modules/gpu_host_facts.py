#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: gpu_host_facts
short_description: Gather GPU-relevant host facts from kernel, OS, PCI and container runtime files
description:
  - Reads files under O(host_root) only (C(/proc), C(/sys), C(/etc), C(/run), C(/var), C(/dev)); runs no commands.
  - Kernel release, version, architecture and whether headers for the running kernel are present; C(/etc/os-release);
    the kernel command line; loaded modules (nvidia, nvidia_uvm, nvidia_modeset, nvidia_drm, nvidia_peermem, nouveau)
    with refcounts; nouveau blacklisting; C(/proc/driver/nvidia/version) (version, open or proprietary);
    Secure Boot from efivars; NVIDIA PCI devices (GPU or NVSwitch, device id, bound driver, NUMA node, IOMMU group);
    IOMMU; C(/dev/nvidia*) and their C(/dev/char) links.
  - The Kubernetes distribution (kubeadm, k3s, rke2, microk8s, k0s) and container runtime (containerd, CRI-O,
    docker) with config path and socket, parsing TOML or JSON to report runtimes, the default runtime, the nvidia
    runtime and CDI; CDI specs; the NVIDIA Container Toolkit config; GPU Operator validation status files;
    the Fabric Manager unit; unattended kernel upgrades.
  - A missing, unreadable or malformed source is listed in RV(ansible_facts.gpu_host.problems); it never fails the task.
author:
  - gpuops.gpu_operator contributors (@gpuops)
extends_documentation_fragment:
  - gpuops.gpu_operator.host_root
  - gpuops.gpu_operator.attributes
  - gpuops.gpu_operator.attributes.FACTS
  - gpuops.gpu_operator.attributes.FACTS_MODULE
  - gpuops.gpu_operator.attributes.PLATFORM_GPU_HOST
  - gpuops.gpu_operator.attributes.ACTIONGROUP_GPU
notes:
  - The facts are RV(ansible_facts.gpu_host).
  - TOML parsing needs Python 3.11 (C(tomllib)) or C(tomli) on the target; otherwise the TOML sources are
    reported as V(toml_parser_unavailable) problems.
seealso:
  - module: gpuops.gpu_operator.nvidia_gpu_facts
"""

EXAMPLES = r"""
- name: Gather GPU host facts
  gpuops.gpu_operator.gpu_host_facts:

- name: Gather from a container with the host mounted at /host
  gpuops.gpu_operator.gpu_host_facts:
    host_root: /host

- name: Refuse nodes where nouveau is loaded
  ansible.builtin.assert:
    that: not ansible_facts.gpu_host.nouveau.loaded
    fail_msg: nouveau is loaded; blacklist it and rebuild the initramfs
"""

RETURN = r"""
ansible_facts:
  description: Facts added to the host.
  returned: always
  type: dict
  contains:
    gpu_host:
      description: GPU host facts; see docs/host-facts.md for every key.
      returned: always
      type: dict
      contains:
        host_root:
          description: The host root that was read.
          type: str
          returned: always
        kernel:
          description: C(release), C(version), C(architecture), C(headers_present).
          type: dict
          returned: always
          sample: {release: 5.15.0-124-generic, architecture: x86_64, headers_present: true}
        os:
          description: From os-release, C(id), C(version_id), C(id_like) (list), C(pretty_name), C(version_codename).
          type: dict
          returned: always
          sample: {id: ubuntu, version_id: "22.04"}
        cmdline:
          description: C(raw) kernel command line and parsed C(args).
          type: dict
          returned: always
        modules:
          description: Per module name, C(loaded) and C(refcount).
          type: dict
          returned: always
        nouveau:
          description:
            - C(loaded), C(blacklisted_modprobe), C(modeset_disabled), C(blacklisted_cmdline),
              C(blacklist_files).
          type: dict
          returned: always
        nvidia_driver:
          description:
            - From C(/proc/driver/nvidia/version), C(loaded), C(version), C(flavor) (V(open) or
              V(proprietary)), C(gcc).
          type: dict
          returned: always
        secure_boot:
          description: C(efi) (booted by EFI) and C(enabled).
          type: dict
          returned: always
        pci:
          description:
            - C(devices) (C(address), C(device_id), C(class), C(kind) V(gpu), V(nvswitch) or V(other), C(driver),
              C(numa_node), C(iommu_group)), C(gpu_count), C(nvswitch_count).
          type: dict
          returned: always
        iommu:
          description: C(enabled), C(groups) (count), C(cmdline) (IOMMU kernel arguments).
          type: dict
          returned: always
        devices:
          description:
            - C(nodes) (C(/dev/nvidia*) names), C(char_links) (C(/dev/char) name to target),
              C(char_links_missing).
          type: dict
          returned: always
        kubernetes:
          description: C(distribution) (V(kubeadm), V(k3s), V(rke2), V(microk8s), V(k0s) or V(null)) and C(role).
          type: dict
          returned: always
        container_runtime:
          description:
            - C(name) (V(containerd), V(cri-o), V(docker)), C(config_path), C(template_path), C(socket),
              C(socket_present), C(config) (C(version), C(runtimes), C(default_runtime), C(nvidia_runtime),
              C(nvidia_runtime_binary), C(systemd_cgroup), C(cdi_enabled), C(imports)).
          type: dict
          returned: always
        cdi:
          description: C(specs) (C(path), C(kind)) and C(nvidia) (an C(nvidia.com/*) spec exists).
          type: dict
          returned: always
        container_toolkit:
          description: C(installed), C(config_path), C(mode), C(cdi_default_kind), C(ldconfig), C(root).
          type: dict
          returned: always
        validations:
          description: C(present), C(files), C(ready) (per component), C(all_ready), C(driver_ready) (parsed KEY=value).
          type: dict
          returned: always
        fabric_manager:
          description: C(installed), C(enabled), C(required) (NVSwitches present).
          type: dict
          returned: always
        unattended_upgrades:
          description: C(tool), C(enabled), C(kernel_blacklisted).
          type: dict
          returned: always
        problems:
          description: Sources that were missing, unreadable or malformed, with C(source), C(reason), C(detail).
          type: list
          elements: dict
          returned: always
"""

import os

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.host_facts.facts import collect
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.errors import ArgumentError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.module import run_module


def argspec():
    return dict(host_root=dict(type='path', default='/'))


def check_host_root(root):
    """Refuse a host_root that is missing, not a directory, or not a root file system (a typo in an inventory
    must not read as a host without GPUs)."""
    if not os.path.isdir(root):
        raise ArgumentError(
            "host_root %s is not a directory; set host_root to where the host's / is mounted (/ on the host "
            "itself, for example /host in a container)" % root
        )
    if not any(os.path.isdir(os.path.join(root, d)) for d in ('proc', 'sys', 'etc')):
        raise ArgumentError(
            "host_root %s does not look like a root file system (no proc, sys or etc in it); set host_root to "
            "where the host's / is mounted" % root
        )


def execute_module(module):
    check_host_root(module.params['host_root'])
    return dict(ansible_facts=dict(gpu_host=collect(module.params['host_root'])))


def main():
    run_module(argspec(), execute_module, supports_check_mode=True)


if __name__ == '__main__':
    main()
