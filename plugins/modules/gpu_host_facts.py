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
  - Reads files under O(host_root) only (C(/proc), C(/sys), C(/dev), C(/etc), C(/run), C(/var), C(/usr), C(/lib),
    C(/boot)); runs no commands.
  - Every path is resolved inside O(host_root) as C(chroot) would resolve it, whatever the links in it say - an
    absolute link target is read from O(host_root) (never from the machine running the module), C(..) stops at
    O(host_root), a loop ends; a link that climbs above O(host_root) or points nowhere is a problem.
  - Kernel release, version, architecture and the path of the headers for the running kernel; C(/etc/os-release);
    the kernel command line; loaded modules (nvidia, nvidia_uvm, nvidia_modeset, nvidia_drm, nvidia_peermem, nouveau,
    vfio_pci) with refcounts; nouveau blacklisting; C(/proc/driver/nvidia/version) (version, open or proprietary);
    Secure Boot from efivars; NVIDIA PCI devices (GPU or NVSwitch, device id, bound driver, NUMA node, IOMMU group);
    NUMA nodes; IOMMU; C(/dev/nvidia*) and their C(/dev/char) links; VFIO passthrough (devices bound to vfio-pci,
    C(/dev/vfio), vfio-pci ids, nvidia and nouveau blacklisting).
  - The Kubernetes distribution (kubeadm, k3s, rke2, microk8s, k0s) and container runtime (containerd, CRI-O,
    docker), whether the distribution's own containerd or the system one is in use, config path, socket and k3s or
    RKE2 template, parsing TOML, JSON or YAML to report runtimes, the default runtime and every NVIDIA runtime handler
    (binary, runtime type, cgroup setting) and CDI; docker's C(daemon.json) beside another runtime; CDI specs
    (kind, version, device names); the NVIDIA Container Toolkit config; the GPU Operator's driver root and
    validation status files; the Fabric Manager unit; unattended kernel upgrades.
  - Comments are never read as configuration, in any of these formats.
  - Unknown is not false. A fact whose source is missing where it must exist, unreadable or malformed is
    V(null) and its source is listed in RV(ansible_facts.gpu_host.problems); V(false) means the source was read
    and says no. A device or link that cannot be resolved is kept, with a problem. A broken host never fails the
    task.
  - Fails only when O(host_root) does not exist, is not a directory, or has none of C(proc), C(sys) and C(etc) in it
    (a typo in an inventory must not read as a host without GPUs).
author:
  - gpuops.gpu_operator contributors (@gpuops)
extends_documentation_fragment:
  - gpuops.gpu_operator.host_root
attributes:
  check_mode:
    support: full
    description: The module only reads.
  diff_mode:
    support: none
    description: The module returns no diff.
  facts:
    support: full
    description: Returns RV(ansible_facts.gpu_host).
notes:
  - TOML parsing needs Python 3.11 (C(tomllib)) or C(tomli) on the target, YAML parsing (CDI specs, k3s and RKE2
    C(config.yaml)) PyYAML; otherwise those sources are reported as V(toml_parser_unavailable) or
    V(yaml_parser_unavailable) problems and the facts they feed are V(null).
  - docs/host-facts.md lists every fact, its source files and which facts are tri-state.
seealso:
  - module: gpuops.gpu_operator.nvidia_gpu_facts
"""

EXAMPLES = r"""
- name: Gather GPU host facts
  gpuops.gpu_operator.gpu_host_facts:

- name: Gather from a container with the host mounted at /host
  gpuops.gpu_operator.gpu_host_facts:
    host_root: /host

- name: Refuse nodes where nouveau is loaded (null, unknown, is not a pass)
  ansible.builtin.assert:
    that: ansible_facts.gpu_host.nouveau.loaded is false
    fail_msg: >-
      nouveau is {{ 'loaded' if ansible_facts.gpu_host.nouveau.loaded else 'in an unknown state' }};
      see ansible_facts.gpu_host.problems
"""

RETURN = r"""
ansible_facts:
  description: Facts added to the host.
  returned: always
  type: dict
  contains:
    gpu_host:
      description: GPU host facts; see docs/host-facts.md for every key, its sources and which are tri-state.
      returned: always
      type: dict
      contains:
        host_root:
          description: The host root that was read.
          type: str
          returned: always
        kernel:
          description:
            - C(release), C(version), C(architecture) (C(/proc/sys/kernel/arch), else the NVIDIA module's or the
              kernel's build line, else the kernel config, else the release name), C(headers_present),
              C(headers_path).
          type: dict
          returned: always
          sample: {release: 5.15.0-124-generic, architecture: x86_64, headers_present: true}
        os:
          description: From os-release, C(id), C(version_id), C(id_like) (list), C(pretty_name), C(version_codename).
          type: dict
          returned: always
          sample: {id: ubuntu, version_id: "22.04"}
        precompiled_driver:
          description:
            - C(kernel), C(os_tag) and C(tag_pattern), the precompiled driver image tag the operator looks for
              (C(<branch>-<kernel>-<os>)).
          type: dict
          returned: always
          sample: {kernel: 6.8.0-51-generic, os_tag: ubuntu24.04, tag_pattern: <branch>-6.8.0-51-generic-ubuntu24.04}
        cmdline:
          description:
            - C(raw) kernel command line and parsed C(args) (V(null) when unread or empty); repeated
              C(modprobe.blacklist=) values add up, as libkmod reads them.
          type: dict
          returned: always
        modules:
          description: Per module name, C(loaded) and C(refcount).
          type: dict
          returned: always
        loaded_modules:
          description:
            - From C(/proc/modules), C(count) and C(modules) (every loaded module, C(name), C(size), C(refcount),
              C(used_by), C(state), C(taints)).
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
          description:
            - C(efi) (booted by EFI), C(enabled), C(mok_keys) (SHA-1 fingerprints of the enrolled MOK keys) and
              C(nvidia_module_signed) (the loaded nvidia module carries no unsigned taint on a kernel that checks).
          type: dict
          returned: always
        pci:
          description:
            - C(devices) (C(address), C(device_id), C(class), C(kind) V(gpu), V(nvswitch), V(other) or V(null)
              when unresolved, C(driver), C(numa_node), C(iommu_group)), C(gpu_count), C(nvswitch_count),
              C(unresolved_count).
          type: dict
          returned: always
        numa:
          description: C(node_count) and C(nodes) online.
          type: dict
          returned: always
        iommu:
          description:
            - C(enabled), C(groups) (count), C(cmdline) (IOMMU kernel arguments), C(group_devices) (group to PCI
              addresses).
          type: dict
          returned: always
        devices:
          description:
            - C(nodes) (C(/dev/nvidia*) names), C(char_links) (C(/dev/char) name to target),
              C(char_links_missing), C(char_links_dangling).
          type: dict
          returned: always
        vfio:
          description:
            - C(module_loaded), C(devices) bound to vfio-pci (C(address), C(kind), C(iommu_group), C(dev_node)),
              C(gpu_count), C(dev_entries) (C(/dev/vfio)), C(ids), C(nvidia_blacklisted), C(nouveau_blacklisted).
          type: dict
          returned: always
        kubernetes:
          description: C(distribution) (V(kubeadm), V(k3s), V(rke2), V(microk8s), V(k0s) or V(null)) and C(role).
          type: dict
          returned: always
        container_runtime:
          description:
            - C(name) (V(containerd), V(cri-o), V(docker)), C(config_path), C(config_source) (V(distribution) or
              V(system)), C(socket), C(socket_present), C(config) (C(runtimes), C(default_runtime),
              C(nvidia_runtime), C(nvidia_runtimes) (per handler C(binary), C(runtime_type), C(systemd_cgroup)),
              C(cdi_enabled), and per runtime more), C(template_path), C(template) (C(extends_base), C(config)),
              C(docker) (C(daemon.json) summary whenever it exists), C(version) and C(version_source) (dpkg status
              or the binary's Go build information), C(config_files) (containerd's root config and each import,
              C(path), C(version), C(runtimes), C(default_runtime), C(cdi_enabled), C(nri_enabled)),
              C(system_config_present).
          type: dict
          returned: always
        cdi:
          description: C(specs) (C(path), C(kind), C(cdi_version), C(devices)) and C(nvidia) (an C(nvidia.com/*) spec).
          type: dict
          returned: always
        container_toolkit:
          description: C(installed), C(config_path), C(mode), C(cdi_default_kind), C(ldconfig), C(root).
          type: dict
          returned: always
        operator_driver:
          description: The GPU Operator's driver root, C(root), C(present), C(nvml_library).
          type: dict
          returned: always
        validations:
          description: C(present), C(files), C(ready) (per component), C(all_ready), C(driver_ready) (parsed KEY=value).
          type: dict
          returned: always
        fabric_manager:
          description: C(installed), C(unit_path), C(enabled), C(required) (NVSwitches present).
          type: dict
          returned: always
        unattended_upgrades:
          description: C(tool), C(enabled), C(kernel_blacklisted).
          type: dict
          returned: always
        problems:
          description:
            - Sources that were missing, unreadable, malformed, dangling, outside O(host_root) or in a link loop, or
              for which no parser is installed, with C(source), C(reason), C(detail).
          type: list
          elements: dict
          returned: always
"""

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.host_facts.facts import (
    check_host_root,
    collect,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.module import run_module


def argspec():
    return dict(host_root=dict(type='path', default='/'))


def execute_module(module):
    check_host_root(module.params['host_root'])
    return dict(ansible_facts=dict(gpu_host=collect(module.params['host_root'])))


def main():
    run_module(argspec(), execute_module, supports_check_mode=True)


if __name__ == '__main__':
    main()
