#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: gpu_cluster_info
short_description: The Kubernetes view of every GPU node, GPU Operator operand and driver CR, and the DRA devices
description:
  - Reads GPU node labels, C(nvidia.com/gpu) and C(nvidia.com/mig-*) capacity and allocatable, taints, conditions,
    cordon, the driver upgrade state, and the GPU Operator operand pods on each node, plus the ClusterPolicy,
    the NVIDIADriver resources and the Kubernetes version.
  - Dynamic Resource Allocation (DRA, C(resource.k8s.io/v1)) - per node, how GPUs reach pods (RV(nodes) C(mode) -
    the C(nvidia.com/gpu) extended resource, DRA claims, both or none) and the devices the O(dra_driver) publishes
    in its ResourceSlices, with their attributes, device taints, the pool generation and whether the pool is
    complete, which devices are allocated or free and the claims holding them; plus the DeviceClasses (RV(dra)).
  - Uses a fixed, small number of paginated LIST requests whatever the cluster size (nodes, pods of the operator
    namespace, ClusterPolicies, NVIDIADrivers, GPUClusters (only without a ClusterPolicy), the driver's
    ResourceSlices, DeviceClasses and ResourceClaims, C(/version)); never one request per node. A LIST of up to
    O(page_size) objects is one request, so with the default O(page_size=2000) 1,000 GPU nodes with 7 operands each
    take 9 requests (1 for the nodes, 4 for 7,000 pods, 4 more) and 1,000 DRA nodes with 3 operands and up to
    2,000 claims take 11 (1 for the nodes, 2 for 3,000 pods, 8 more, among them the GPUClusters when there is no
    ClusterPolicy and the operator's pods in every namespace when no ClusterPolicy reports the operator namespace -
    see O(operator_namespace)).
  - The operator namespace's C(FailedCreatePodSandBox) Events are listed (one more paginated LIST) only while some
    operand pod waits in C(ContainerCreating), to tell a sandbox that fails from one still being made.
  - DeviceClasses and ResourceClaims are listed only when some node publishes a ResourceSlice of O(dra_driver);
    a cluster that does not serve C(resource.k8s.io/v1) (HTTP 404; Kubernetes before 1.34) has no DRA devices.
  - Read-only. Needs RBAC C(list) on nodes, on pods and events in O(operator_namespace) (and in every namespace
    when it is discovered and the ClusterPolicy does not report it), on
    C(clusterpolicies.nvidia.com) and C(nvidiadrivers.nvidia.com), and on C(resourceslices), C(deviceclasses) and
    C(resourceclaims) of C(resource.k8s.io).
  - Transient API failures (HTTP 429, 5xx, connection errors) are retried with exponential backoff and jitter,
    honouring C(Retry-After).
author:
  - gpuops.gpu_operator contributors (@gpuops)
extends_documentation_fragment:
  - gpuops.gpu_operator.kubeconfig
  - gpuops.gpu_operator.quarantine
  - gpuops.gpu_operator.operator_names
  - gpuops.gpu_operator.attributes
  - gpuops.gpu_operator.attributes.INFO_MODULE
  - gpuops.gpu_operator.attributes.CLUSTER
options:
  label_selector:
    description:
      - Kubernetes label selector for the nodes to report, applied by the API server, for example
        V(nvidia.com/gpu.product=Tesla-T4) or V(gpuops.io/pool in (canary\)).
      - When omitted, every node is listed and the GPU nodes are kept. A GPU node is one with any of the labels
        C(nvidia.com/gpu.present=true), C(feature.node.kubernetes.io/pci-10de.present=true),
        C(feature.node.kubernetes.io/pci-0302_10de.present=true),
        C(feature.node.kubernetes.io/pci-0300_10de.present=true),
        or with C(nvidia.com/gpu) or C(nvidia.com/mig-*) capacity. Label selectors cannot express this OR, and
        the NFD labels also catch nodes the operator has not labelled yet or has marked C(nvidia.com/gpu.present=false)
        after a GPU fell off the bus.
      - With a selector, the matching nodes are reported whether or not they look like GPU nodes.
    type: str
  page_size:
    description:
      - Objects per LIST page (the C(limit) parameter). Larger pages mean fewer requests and more memory per
        response (a page of 2,000 operand pods is about 10 MB of JSON).
      - Pagination stays consistent at any size; an expired continue token restarts the LIST once.
    type: int
    default: 2000
  dra_driver:
    description:
      - The DRA driver whose ResourceSlices are read (their C(spec.driver), filtered by the API server). The
        default is NVIDIA's GPU driver (kubernetes-sigs/dra-driver-nvidia-gpu), which the GPU Operator deploys
        in GPUCluster mode.
    type: str
    default: gpu.nvidia.com
  node_detail:
    description:
      - How much per-node detail the module returns. RV(totals) cover every GPU node whatever the choice, and the
        requests made are the same. A node has a problem when its RV(node_summary) C(problems) is not empty (not
        Ready, cordoned, operands not ready or missing, a failed driver upgrade, a DRA problem).
      - V(problems) - RV(nodes) (the full view) and RV(node_summary) of the nodes with a problem only - the fleet
        shape, small whatever the fleet's size (Ansible serialises, registers and templates every byte a module
        returns; a healthy 1,000-node fleet returns a few kilobytes).
      - V(summary) - RV(node_summary) of every node (about 200 bytes a node) and RV(nodes) of the nodes with a
        problem.
      - V(all) - RV(nodes) and RV(node_summary) of every node (several kilobytes a node; about 4 MB of JSON for
        1,000 nodes). The shape before this option existed; use it to look at healthy nodes in full.
      - V(none) - RV(node_summary) of every node, no RV(nodes).
    type: str
    choices: [problems, summary, all, none]
    default: problems
notes:
  - RV(nodes) is a dictionary keyed by node name so that a play can look a node up with
    C(result.nodes[inventory_hostname]); iterate with C(result.nodes | dict2items) (C(item.key) is the node's name,
    C(item.value) the node).
  - The response JSON is parsed directly, without the kubernetes client model classes, which keeps a
    1,000-node LIST fast. See C(docs/cluster-info.md) in the collection for measured figures.
seealso:
  - module: kubernetes.core.k8s_info
    description: Arbitrary Kubernetes objects, for anything this module does not summarise.
"""

EXAMPLES = r"""
- name: Read the cluster's GPU view, every node in full
  gpuops.gpu_operator.gpu_cluster_info:
    kubeconfig: ~/.kube/config
    node_detail: all
  register: gpu_info

- name: Every GPU node advertises all of its GPUs
  ansible.builtin.assert:
    that:
      - item.value.allocatable['nvidia.com/gpu'] | default(0) == item.value.gpu.count
    fail_msg: "{{ item.key }}: allocatable {{ item.value.allocatable }} != gpu.count {{ item.value.gpu.count }}"
    quiet: true
  loop: "{{ gpu_info.nodes | dict2items }}"
  loop_control:
    label: "{{ item.key }}"

- name: Only the canary pool, operator in a custom namespace
  gpuops.gpu_operator.gpu_cluster_info:
    context: prod
    label_selector: gpuops.io/pool=canary
    operator_namespace: nvidia-gpu-operator
  register: canary

- name: Every node meant to run the DRA driver publishes devices the scheduler can use, none of them tainted
  ansible.builtin.assert:
    that: item.value.dra.problems == []
    fail_msg: "{{ item.key }}: {{ item.value.dra.problems }}"
    quiet: true
  loop: "{{ gpu_info.nodes | dict2items | selectattr('value.dra.expected') }}"
  loop_control:
    label: "{{ item.key }}"

- name: A thousand-node fleet - the default returns the totals and only the nodes with a problem
  gpuops.gpu_operator.gpu_cluster_info:
  register: fleet

- name: Every GPU node is ready
  ansible.builtin.assert:
    that: fleet.totals.nodes_operands_ready == fleet.totals.nodes
    fail_msg: "{{ fleet.node_summary | dict2items | map(attribute='key') | list }} have problems"

- name: Nodes whose driver upgrade failed
  ansible.builtin.debug:
    msg: "{{ fleet.node_summary | dict2items | selectattr('value.problems', 'contains', 'upgrade-failed')
             | map(attribute='key') | list }}"
"""

RETURN = r"""
nodes:
  description:
    - GPU nodes keyed by node name (see O(label_selector) for which nodes); by default (O(node_detail=problems))
      and with O(node_detail=summary) only those with a problem, with O(node_detail=all) every one, with
      O(node_detail=none) none.
    - Each value has C(name); C(gpu) (from labels - C(present), C(product), C(count), C(memory_mib), C(family),
      C(replicas), C(sharing_strategy), C(driver_version), C(cuda_runtime_version), and C(mig) with C(capable),
      C(strategy), C(config), C(config_state), C(types)); C(capacity) and C(allocatable) (only C(nvidia.com/gpu) and
      C(nvidia.com/mig-*), as integers); C(taints) (list of C(key), C(value), C(effect)); C(unschedulable) (cordoned);
      C(ready); C(conditions) (by type - C(status), C(reason), C(message), C(last_transition_time)); C(quarantine)
      (the evidence that a fault-remediation system or a person took the node out of service - each remediation
      marker it carries (O(quarantine_markers)) and a cordon the upgrade controller does not hold, with C(kind),
      C(key), C(owner) and the taint's C(value) and C(effect), the annotation's C(value) or the condition's
      C(reason) and C(message); empty when none);
      C(upgrade_state) (label C(nvidia.com/gpu-driver-upgrade-state), null when absent); C(upgrade_skip);
      C(deploy) (the C(nvidia.com/gpu.deploy.<component>) labels by component); C(labels) (all C(nvidia.com/*) and
      NVIDIA PCI labels); C(kubelet_version), C(kernel_version), C(os_image), C(container_runtime_version);
      C(operands), C(operands_missing), C(operands_ready) and C(operands_stuck); C(mode) and C(dra).
    - C(mode) is how GPUs reach pods on the node - V(extended-resource) (it advertises C(nvidia.com/gpu) or
      C(nvidia.com/mig-*) capacity, the device plugin's way), V(dra) (it publishes DRA devices), V(both), or V(none).
    - C(operands) maps a component (C(driver), C(container-toolkit), C(device-plugin), C(gpu-feature-discovery),
      C(dcgm-exporter), C(operator-validator), C(mig-manager), ...) to its pod on the node - C(name), C(phase),
      C(ready), C(restarts) (all containers, init included), C(waiting_reason), C(waiting_message) (the runtime's
      or kubelet's word for it, first 500 characters), C(last_termination_reason),
      C(last_termination_container), C(last_termination_message) (its last 500 characters), C(terminating),
      C(start_time), C(other_pods) (more pods of the same component on the node, during a rollout), C(sandbox_error)
      (the message of the pod's newest C(FailedCreatePodSandBox) event, null when none; read only while some
      operand pod waits in C(ContainerCreating)).
    - C(operands_missing) lists the required operands (C(driver), C(container-toolkit), C(device-plugin),
      C(dra-driver)) whose C(nvidia.com/gpu.deploy.<component>) label is C(true) and which the ClusterPolicy enables
      (C(driver.enabled), C(toolkit.enabled), C(devicePlugin.enabled); all by default) but which have no pod on the
      node. The DRA kubelet plugin (pods C(app=nvidia-dra-driver-kubelet-plugin)) is the component C(dra-driver).
    - C(dra) - C(driver); C(expected) (the node is labelled C(nvidia.com/gpu.deploy.dra-driver=true) or runs a
      kubelet-plugin pod); C(plugin_pod) and C(plugin_ready); C(pools) (per pool - C(name), C(generation),
      C(resource_slice_count), C(slices) of the current generation, C(stale_slices) of older ones, C(complete));
      C(slices); C(devices) (those the scheduler can allocate - the current generation of complete pools - each
      with C(name), C(type) (V(gpu) or V(mig)), C(uuid), C(product), C(profile), C(parent_uuid),
      C(driver_version) (semver as published - V(570.124.6) for NVML's V(570.124.06); compare as versions),
      C(attributes) and C(capacity) (all, by published name), C(taints) (C(key), C(value), C(effect),
      C(time_added)), C(allocated) (held by a claim without admin access), C(claims) (C(namespace/name)),
      C(admin_claims), C(pods) (that reserved it) and C(free) (not allocated and no C(NoSchedule)/C(NoExecute)
      taint)); C(device_types) and C(products) (device counts by value); C(driver_version) (when all devices agree);
      C(devices_total), C(devices_allocated), C(devices_tainted), C(devices_free); C(problems) (sentences - the
      kubelet plugin not ready, no ResourceSlice on a node meant to have one, an incomplete pool, slices of an older
      generation, a tainted device, fewer devices than the node's peers with the same product).
    - Uuids repeat across nodes of a pool built from the same fixtures in the test bed; on real hardware they are
      unique. A device is identified by node and name.
    - C(operands_ready) is true when the operator has labelled the node (C(nvidia.com/gpu.present=true)), no required
      operand is missing and every operand pod on the node is Ready (or Succeeded, for validation pods). A node the
      operator has not reached yet is not ready, though no operand pod runs there.
    - C(operands_stuck) is true when an operand pod on the node will not get ready by waiting - its sandbox cannot
      be created (C(ContainerCreating) with a C(sandbox_error)), its image cannot be pulled (C(ImagePullBackOff),
      C(ErrImagePull), C(InvalidImageName)), its container cannot be created (C(CreateContainerConfigError),
      C(CreateContainerError)), or it crash-loops after 3 restarts or more; a wait on the operands can stop there.
  returned: always
  type: dict
  sample:
    gpu-h100-0:
      name: gpu-h100-0
      gpu: {present: true, product: NVIDIA-H100-80GB-HBM3, count: 8, memory_mib: 81559, family: hopper, replicas: 1,
            sharing_strategy: none, driver_version: 550.127.08, cuda_runtime_version: "12.4",
            mig: {capable: false, strategy: null, config: null, config_state: null, types: {}}}
      capacity: {nvidia.com/gpu: 8}
      allocatable: {nvidia.com/gpu: 8}
      taints: [{key: nvidia.com/gpu, value: null, effect: NoSchedule}]
      unschedulable: false
      ready: true
      conditions: {Ready: {status: "True", reason: KubeletReady, message: kubelet is posting ready status,
                           last_transition_time: "2026-01-01T00:00:00Z"}}
      upgrade_state: upgrade-done
      upgrade_skip: false
      deploy: {driver: "false", device-plugin: "true"}
      operands:
        device-plugin: {name: nvidia-device-plugin-daemonset-x7k2p, phase: Running, ready: true, restarts: 0,
                        waiting_reason: null, waiting_message: null, last_termination_reason: null,
                        last_termination_container: null,
                        terminating: false, start_time: "2026-01-01T00:00:00Z", other_pods: [],
                        sandbox_error: null}
      operands_missing: []
      operands_ready: true
      operands_stuck: false
      mode: extended-resource
      dra: {driver: gpu.nvidia.com, expected: false, plugin_pod: null, plugin_ready: false, pools: [], slices: [],
            devices: [], device_types: {}, products: {}, driver_version: null, devices_total: 0,
            devices_allocated: 0, devices_tainted: 0, devices_free: 0, problems: []}
    gpu-b200-0:
      name: gpu-b200-0
      mode: dra
      dra:
        driver: gpu.nvidia.com
        expected: true
        plugin_pod: nvidia-dra-driver-kubelet-plugin-4bq8c
        plugin_ready: true
        pools: [{name: gpu-b200-0, generation: 3, resource_slice_count: 1, slices: [gpu-b200-0-gpu.nvidia.com-x9z],
                 stale_slices: [], complete: true}]
        slices: [gpu-b200-0-gpu.nvidia.com-x9z]
        devices:
          - {name: gpu-0, type: gpu, uuid: GPU-5e1c..., product: NVIDIA B200, profile: null, parent_uuid: null,
             driver_version: 580.105.8, attributes: {type: gpu, productName: NVIDIA B200, driverVersion: 580.105.8},
             capacity: {memory: "191514247168"}, taints: [], allocated: true, claims: [ml/train-0-gpu-x7k2p],
             admin_claims: [], pods: [ml/train-0], free: false}
        device_types: {gpu: 8}
        products: {NVIDIA B200: 8}
        driver_version: 580.105.8
        devices_total: 8
        devices_allocated: 1
        devices_tainted: 0
        devices_free: 7
        problems: []
node_summary:
  description:
    - GPU nodes keyed by node name - by default (O(node_detail=problems)) only those with a problem, with any other
      O(node_detail) every one - in a few fields - C(mode), C(ready), C(unschedulable), C(operands_ready) and
      C(operands_stuck) (as in RV(nodes)), C(gpu_capacity) and C(gpu_allocatable) (the
      C(nvidia.com/gpu) resource, null when not advertised), C(dra_devices) (DRA devices published), and
      C(problems).
    - C(problems) lists, in this order, V(not-ready), V(unschedulable) (cordoned), V(foreign-quarantine) (its
      C(quarantine) evidence is not empty), V(operands-not-ready),
      V(operands-missing), V(upgrade-failed) (driver upgrade state) and V(dra) (the node's C(dra.problems) is not
      empty) where they apply; empty for a healthy node.
  returned: always
  type: dict
  sample:
    gpu-h100-0: {mode: extended-resource, ready: true, unschedulable: false, operands_ready: true,
                 operands_stuck: false, gpu_capacity: 8, gpu_allocatable: 8, dra_devices: 0, problems: []}
    gpu-h100-1: {mode: extended-resource, ready: true, unschedulable: true, operands_ready: false,
                 operands_stuck: false, gpu_capacity: 8, gpu_allocatable: 8, dra_devices: 0,
                 problems: [unschedulable, operands-not-ready]}
cluster_policy:
  description:
    - The ClusterPolicy the operator acts on (O(cluster_policy), else one that is not C(ignored), then the oldest,
      then by name); null when there is none or the CRD is not installed (see RV(crds)).
    - Keys C(name), C(state), C(ready), C(conditions) (list of C(type), C(status), C(reason), C(message),
      C(last_transition_time)), C(generation), C(creation_timestamp), C(namespace), C(mig_strategy), C(driver)
      with C(enabled), C(version), C(repository), C(use_nvidia_driver_crd), C(upgrade_policy), and C(cdi) with
      C(enabled) (C(spec.cdi.enabled), null when unset) and C(nri_plugin) (C(spec.cdi.nriPluginEnabled) is true -
      NRI plugin mode, no RuntimeClass and no runtime handler).
  returned: always
  type: dict
  sample: {name: cluster-policy, state: ready, ready: true, conditions: [], driver: {version: 550.127.08}}
nvidia_drivers:
  description:
    - NVIDIADriver resources sorted by name; empty when there are none or the CRD is not installed.
    - Keys C(name), C(state), C(ready), C(conditions), C(generation), C(creation_timestamp), C(driver_type), C(version),
      C(repository), C(default), C(node_selector), C(use_precompiled), C(kernel_module_type), C(upgrade_policy).
  returned: always
  type: list
  elements: dict
crds:
  description: Whether the C(clusterpolicies.nvidia.com) and C(nvidiadrivers.nvidia.com) CRDs answered a LIST.
  returned: always
  type: dict
  sample: {clusterpolicies.nvidia.com: true, nvidiadrivers.nvidia.com: true}
unscheduled_operands:
  description: Operand pods not bound to any node (for example Pending because a taint is not tolerated).
  returned: always
  type: list
  elements: dict
kubernetes_version:
  description: The API server's C(/version) - C(git_version), C(major), C(minor), C(platform).
  returned: always
  type: dict
  sample: {git_version: v1.33.1, major: "1", minor: "33", platform: linux/amd64}
dra:
  description:
    - The cluster's DRA state for O(dra_driver) - C(served) (the API server answered C(resource.k8s.io/v1)),
      C(driver), C(device_classes) (by name - C(name), C(selectors) (CEL expressions), C(extended_resource_name);
      null when not listed, that is when no node publishes a ResourceSlice of the driver),
      C(device_classes_missing) (C(gpu.nvidia.com) or C(mig.nvidia.com) when devices of that type are published
      but the class does not exist), C(claims_listed), C(allocated_claims) (C(namespace/name) of the claims holding
      devices of the driver) and C(problems) (sentences).
  returned: always
  type: dict
  sample: {served: true, driver: gpu.nvidia.com, device_classes_missing: [], claims_listed: true,
           device_classes: {gpu.nvidia.com: {name: gpu.nvidia.com, extended_resource_name: null,
                            selectors: ["device.driver == 'gpu.nvidia.com' &&
                                         device.attributes['gpu.nvidia.com'].type == 'gpu'"]}},
           allocated_claims: [ml/train-0-gpu-x7k2p], problems: []}
totals:
  description:
    - Fleet totals over every GPU node, whatever O(node_detail) - C(nodes), C(nodes_ready),
      C(nodes_unschedulable), C(nodes_operands_ready), C(nodes_operands_stuck),
      C(gpu_capacity), C(gpu_allocatable), C(mig_capacity) and C(mig_allocatable) (by resource name),
      C(products), C(driver_versions) and C(upgrade_states) (node counts by value), C(operand_pods),
      C(operand_pods_not_ready), C(operand_pods_unscheduled), C(modes) (node counts by C(mode)), C(dra_devices),
      C(dra_devices_allocated), C(dra_devices_free), C(dra_devices_tainted).
  returned: always
  type: dict
  sample: {nodes: 3, nodes_ready: 3, gpu_capacity: 17, gpu_allocatable: 17, upgrade_states: {upgrade-done: 3}}
operator:
  description:
    - The operator's names this run used and how each was found - C(mode) (V(clusterpolicy), V(nvidiadriver) - a
      ClusterPolicy that takes the driver from NVIDIADriver objects, V(gpucluster) - the 26.7+ GPUCluster CR, or
      null when neither object exists), C(namespace), C(namespace_source) (V(option), V(cluster_policy),
      V(operator_pods), V(nvidia_driver) or V(default)), C(cluster_policy), C(gpu_cluster) (the GPUCluster in use
      when there is no ClusterPolicy), C(nvidia_drivers) and C(problems) (sentences).
  returned: always
  type: dict
  sample: {mode: clusterpolicy, namespace: nvidia-gpu-operator, namespace_source: cluster_policy,
           cluster_policy: gpu-cluster-policy, gpu_cluster: null, nvidia_drivers: [], problems: []}
driver_upgrades:
  description:
    - One entry per GPU node whose driver upgrade (NVIDIA's upgrade controller, label
      C(nvidia.com/gpu-driver-upgrade-state)) is not done - empty when every node is done or unmanaged.
    - C(node), C(state), C(since) (from the controller's own Event for that state, else its start-time annotations,
      else the last write of the state label; null when unknown), C(seconds) in that state, C(cause) (what the cluster
      shows, such as the skip label, C(maxUnavailable) used up by cordoned or NotReady nodes, a PodDisruptionBudget
      refusing an eviction, a pod stuck terminating, jobs waited for, a validator or driver pod not ready), C(fix) (a
      command, or null) and C(stalled) (the cause holds the node; false while the controller works on it).
  returned: always
  type: list
  elements: dict
  sample: [{node: h100-3, state: drain-required, since: "2026-12-06T07:52:10Z", seconds: 41, stalled: true,
            cause: "the eviction of pod default/web-0 is refused: PodDisruptionBudget default/web allows 0 disruptions",
            fix: "kubectl -n default delete pod web-0"}]
api_requests:
  description: HTTP requests made to the API server, retries and every LIST page included.
  returned: always
  type: int
  sample: 5
"""

import time

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.k8s import KUBERNETES, module_client
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.args import (
    KUBECONFIG_ARG_SPEC,
    OPERATOR_NAMES_ARG_SPEC,
    QUARANTINE_ARG_SPEC,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.module import run_module
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.upgrade_stalls import read_stalls
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.cluster_read import read_lists, view_of
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.cluster_view import NODE_DETAIL
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.dra_view import DRIVER


def argspec():
    spec = dict(KUBECONFIG_ARG_SPEC, **QUARANTINE_ARG_SPEC)
    spec.update(OPERATOR_NAMES_ARG_SPEC)
    spec.update(
        {
            "label_selector": {"type": "str"},
            "page_size": {"type": "int", "default": 2000},
            "dra_driver": {"type": "str", "default": DRIVER},
            "node_detail": {"type": "str", "choices": list(NODE_DETAIL), "default": "problems"},
        }
    )
    return spec


def gather(client, params):
    """All LISTs the view needs, then the view itself, and why each driver upgrade that is not done stalls (three
    more LISTs, only while one is not done). ``client`` is a ``_clients.k8s.K8sClient``; ``params`` the module's; the
    operator's names are discovered unless given."""
    page_size = params["page_size"]
    lists = read_lists(
        client,
        params["label_selector"],
        params["operator_namespace"],
        page_size,
        params["dra_driver"],
        params["cluster_policy"],
    )
    result = view_of(lists, params["label_selector"], params["node_detail"], params["quarantine_markers"])
    result["driver_upgrades"] = read_stalls(client, lists["nodes"], lists["names"].policy, page_size, time.time())
    result["api_requests"] = client.requests
    return result


def execute_module(module):
    result = gather(module_client(module), module.params)
    result["changed"] = False
    return result


def main():
    run_module(argspec(), execute_module, requirements=[KUBERNETES], supports_check_mode=True)


if __name__ == "__main__":
    main()
