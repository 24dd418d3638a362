#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: gpu_triage_info
short_description: Why a GPU pod is Pending or failing, layer by layer, with evidence
description:
  - Diagnoses one pod (O(pod)), every Pending, Failed or crash-looping GPU pod of a namespace (O(namespace) alone),
    or one node (O(node)), walking the layers in order - C(driver) (node Ready, GPUs present, driver pod state with
    the reason and message of its last termination and the tail of its log), C(toolkit) (container
    toolkit, the C(nvidia) runtime, the operator validator), C(device-plugin) (device plugin pod; capacity,
    allocatable and requested GPUs - on nodes that use the device plugin), C(dra) (Dynamic Resource Allocation -
    the DRA driver's kubelet plugin pod, the node's ResourceSlices and pool generation, device taints; a pod's
    claims - made from their template, the DeviceClass, tainted devices, prepared by the kubelet after scheduling),
    C(scheduling) (the kube-scheduler's C(FailedScheduling) event parsed per
    reason and checked against every node in the scheduler's filter order - cordon, untolerated taint with its key,
    node selector or affinity, C(nvidia.com/gpu) and C(nvidia.com/mig-*) resources, the devices a pod's claims ask
    for), C(quota) (ResourceQuota
    on C(requests.nvidia.com/gpu), LimitRange), C(preemption) (PriorityClass, preemption policy, possible
    victims) and C(queue) (scheduling gates; Kueue LocalQueue, ClusterQueue and Workload; Volcano PodGroup and
    Queue - only when their API groups are served).
  - Returns the first failing layer, every finding with its evidence and a fix, and a short human summary.
  - The driver, toolkit and device plugin layers are checked on the nodes the pod could use (those that pass the
    cordon, taint and selector filters); they block the pod only when no healthy node has room.
  - A pod's DRA claims are evaluated as the scheduler does - the DeviceClass and the claim's CEL selectors on the
    published device attributes, device taints and the request's tolerations, the devices other claims hold, the
    count - so that the scheduler's terse C(cannot allocate all claims) becomes its cause, with the claims holding
    the devices. CEL outside the common subset (attributes, capacities, comparisons, C(semver), C(quantity), string
    methods) counts as matching, never as a false "no device".
  - A pod that asks for C(nvidia.com/gpu) where no node advertises it but nodes offer GPUs through DRA is told to
    use a ResourceClaim with device class C(gpu.nvidia.com).
  - A pod rejected at creation by a ResourceQuota or LimitRange never exists; those rejections come from the
    C(FailedCreate) events of its controller (Job, ReplicaSet, ...), reported for a namespace and for a pod that
    is not found.
  - Read-only. Uses a fixed handful of paginated LISTs whatever the number of pods (nodes, pods on nodes, the
    namespace's pods, events, quotas and limit ranges, PriorityClasses, the operator's pods and events,
    ClusterPolicies and NVIDIADrivers (which name the operator namespace unless O(operator_namespace) does), the
    queue resources when served, and when C(resource.k8s.io/v1) is served the DeviceClasses,
    ResourceSlices, ResourceClaims and the namespace's ResourceClaimTemplates; for a node its ResourceSlices), plus
    at most O(max_logs) log reads. See C(docs/rbac.yml) in the collection for the permissions.
author:
  - gpuops.gpu_operator contributors (@gpuops)
extends_documentation_fragment:
  - gpuops.gpu_operator.kubeconfig
  - gpuops.gpu_operator.operator_names
  - gpuops.gpu_operator.attributes
  - gpuops.gpu_operator.attributes.INFO_MODULE
  - gpuops.gpu_operator.attributes.CLUSTER
options:
  pod:
    description:
      - The pod to diagnose, as V(namespace/name), or just V(name) with O(namespace).
      - Mutually exclusive with O(node).
    type: str
  namespace:
    description:
      - Namespace of O(pod) when O(pod) has no C(namespace/) prefix.
      - Alone (without O(pod) and O(node)), every GPU pod of the namespace that is Pending, Failed or crash-looping
        is diagnosed.
    type: str
  node:
    description:
      - A node to diagnose - the driver, toolkit, validator and device plugin layers, the DRA layer, cordon and
        taints.
      - Mutually exclusive with O(pod) and O(namespace).
    type: str
  nvidia_gpu:
    description:
      - With O(node), the NVML facts of the node's host, as M(gpuops.gpu_operator.nvidia_gpu_facts) gathers them
        (C(ansible_facts.nvidia_gpu)).
      - The node is then judged as M(gpuops.gpu_operator.gpu_validate_report) judges it - for example a DRA node
        whose ResourceSlices publish fewer GPUs than NVML counts fails at the C(dra) layer. Without them nothing
        is compared with the host.
    type: dict
  log_lines:
    description: Lines of log kept from each crash-looping driver or validator pod.
    type: int
    default: 20
  max_logs:
    description: At most this many pod logs are read (one request each); V(0) reads none.
    type: int
    default: 5
  page_size:
    description: Objects per LIST page (the C(limit) parameter).
    type: int
    default: 500
  routes:
    description:
      - Who acts on a finding at each layer, layer name to owner (each finding's C(owner)), merged over the default
        routes - C(driver), C(node), C(toolkit) and C(gpu-health) to V(node-os-team); C(device-plugin), C(dra),
        C(mig), C(scheduling), C(preemption), C(workload) and C(monitoring) to V(platform-team); C(quota) and
        C(queue) to V(namespace-admins). Unset, the defaults apply.
      - The same routes as the C(gpu_validate_routes) of the C(gpuops.gpu_operator.gpu_validate) role, so that a
        Pending pod's finding and a failing node's report name the same team.
      - An unknown layer name fails with the list of known ones.
    type: dict
notes:
  - Findings are ordered by layer, then severity, then in the scheduler's filter order inside the C(scheduling)
    layer (cordon, taint, selector/affinity, resources), so the first one explains the most.
  - The C(reason) of a finding is a stable code meant for C(when:) conditions and assertions; C(message) and C(fix)
    are for people and may be reworded.
  - See C(docs/triage.md) in the collection for every reason and how it is detected.
seealso:
  - module: gpuops.gpu_operator.gpu_cluster_info
    description: The whole cluster's GPU view.
  - module: kubernetes.core.k8s_info
    description: Any Kubernetes object.
  - module: kubernetes.core.k8s_log
    description: Whole pod logs.
"""

EXAMPLES = r"""
- name: Why is my GPU pod Pending?
  gpuops.gpu_operator.gpu_triage_info:
    pod: ml/train-7f9c
  register: triage

- name: Show the summary
  ansible.builtin.debug:
    msg: "{{ triage.summary_lines }}"

- name: Fail when the driver layer is broken
  ansible.builtin.assert:
    that: triage.first_failing_layer != 'driver'
    fail_msg: "{{ triage.findings | selectattr('layer', 'equalto', 'driver') | map(attribute='message') | list }}"

- name: Every Pending or failed GPU pod of a namespace
  gpuops.gpu_operator.gpu_triage_info:
    namespace: ml
  register: ns_triage

- name: Who should act on each finding, with the driver routed to the on-call infrastructure team
  gpuops.gpu_operator.gpu_triage_info:
    namespace: ml
    routes:
      driver: infra-oncall
  register: routed

- name: One node's GPU stack
  gpuops.gpu_operator.gpu_triage_info:
    node: gpu-h100-3
    operator_namespace: nvidia-gpu-operator
  register: node_triage
"""

RETURN = r"""
target:
  description: What was diagnosed - C(kind) (V(pod), V(namespace) or V(node)), C(namespace), C(name).
  returned: always
  type: dict
  sample: {kind: pod, namespace: ml, name: train-0}
first_failing_layer:
  description:
    - The first layer, in walk order, with an C(error) finding; null when nothing blocks.
    - One of V(driver), V(node), V(toolkit), V(device-plugin), V(dra), V(gpu-health), V(mig), V(scheduling),
      V(quota), V(preemption), V(queue), V(workload), V(monitoring) -
      the layer names of the C(gpuops.gpu_operator.gpu_validate) role and the other reports.
  returned: always
  type: str
  sample: driver
layers:
  description:
    - Every layer in walk order with C(name), C(status) (V(failed) - an error finding, V(warning), V(ok), or
      V(skipped) - not applicable, for example the queue layer when neither Kueue nor Volcano is served and a node
      triage's scheduling layers) and C(findings) (how many).
  returned: always
  type: list
  elements: dict
  sample: [{name: driver, status: failed, findings: 1}, {name: toolkit, status: ok, findings: 0}]
findings:
  description:
    - Every finding, ordered by layer, then severity (V(error), V(warning), V(info)), then the walk's order.
    - Keys C(layer); C(reason) (stable code - for example C(DriverCrashLoop), C(DriverImagePull), C(DriverPodMissing),
      C(DriverNotReady), C(NVMLUnavailable), C(NodeNotReady), C(GPUNotPresent), C(GPULabelsMissing),
      C(ToolkitNotReady), C(RuntimeNotConfigured), C(SandboxNotCreated), C(ValidatorFailing), C(OperandNotReady),
      C(OperandMissing),
      C(DevicePluginMissing), C(DevicePluginNotReady), C(DevicePluginNotAdvertising), C(AdvertisedNotAsNVML),
      C(UnhealthyGPUs), C(DraPluginNotReady), C(DraPluginMissing), C(NoResourceSlice), C(PoolIncomplete),
      C(StaleSlices), C(DevicesNotAsNVML), C(DeviceTainted),
      C(ClaimTemplateNotFound), C(ClaimNotCreated), C(ClaimNotFound), C(ClaimBeingDeleted), C(DeviceClassMissing),
      C(DeviceTaintNotTolerated), C(NoDevicesOnNodes), C(PrepareFailed), C(ClaimAllocatedElsewhere),
      C(NoMatchingDevice), C(DevicesAllocated), C(ExtendedResourceOnDRA),
      C(NodeCordoned), C(UntoleratedTaint), C(NodeSelectorMismatch), C(MIGResourceName), C(InsufficientGPU),
      C(SchedulerOther), C(FitsNow), C(QuotaExceeded), C(QuotaFull), C(LimitRangeViolation),
      C(PriorityClassNotFound), C(PreemptionNotPossible), C(PreemptionDisabled), C(PreemptionInProgress),
      C(SchedulingGated), C(KueueLocalQueueNotFound), C(KueueClusterQueueInactive), C(KueueQuotaExhausted),
      C(KueueNotAdmitted), C(VolcanoQueueClosed), C(VolcanoQueueCapability), C(PodNotFound),
      C(NamespaceNotFound), C(LargerThanAnyNode), C(ClaimLargerThanAnyNode); the full list is in
      C(docs/triage.md)); C(severity); C(message); C(fix) (null for plain information); C(evidence) (a dict of
      what the API said - events with C(reason), C(message), C(count), C(last_seen); pod state with
      C(last_termination) C(reason), C(exit_code), C(message); C(log_tail); per-node C(allocatable), C(requested),
      C(free); the taint; the quota; ...); C(nodes) and C(pods) (C(namespace/name)) it concerns; C(owner) (who
      acts on it - the owner of its layer under O(routes)).
  returned: always
  type: list
  elements: dict
  sample:
    - layer: driver
      reason: DriverCrashLoop
      severity: error
      message: 'driver pod nvidia-driver-daemonset-abc on gpu-0 is CrashLoopBackOff (5 restarts), last termination
        Error (exit 1): kernel headers for the running kernel cannot be found -
        "Could not resolve Linux kernel version"'
      fix: Make the kernel headers/devel packages for the node's kernel reachable from the driver container ...
      evidence: {pod: gpu-operator/nvidia-driver-daemonset-abc, restarts: 5, waiting_reason: CrashLoopBackOff,
                 last_termination: {reason: Error, exit_code: 1, message: "..."}, log_tail: ["..."], events: []}
      nodes: [gpu-0]
      pods: [ml/train-0]
      owner: node-os-team
pods:
  description:
    - The pods diagnosed (one for O(pod), every Pending/Failed/crash-looping GPU pod for a namespace, none for a node).
    - Keys C(namespace), C(name), C(phase), C(node), C(gpu_requests), C(claims) (the pod's DRA claims - C(name) of
      its entry, C(template), C(claim) (C(namespace/name), null while not made) and C(status) - V(missing),
      V(not-created), V(deleting), V(none), V(allocated) or V(pending)), C(scheduler_name), C(priority_class),
      C(priority), C(scheduling_gates), C(scheduler_event) (the latest C(FailedScheduling) message parsed - C(nodes),
      C(reasons) with C(count), C(reason), C(filter) and C(resource) or C(key), C(preemption), C(message); null
      when there is none), C(first_failing_layer) and C(findings) (this pod's, same shape as RV(findings)).
  returned: always
  type: list
  elements: dict
nodes:
  description:
    - The nodes examined, by name - C(ready), C(unschedulable), C(taints), C(gpu) (C(present), C(product),
      C(count)), C(capacity), C(allocatable), C(requested) (GPU and MIG resources of the pods bound there),
      C(operands) (component to C(name), C(phase), C(ready), C(restarts), C(waiting_reason)), C(mode)
      (V(extended-resource), V(dra), V(both) or V(none), as M(gpuops.gpu_operator.gpu_cluster_info) says) and C(dra)
      (C(plugin_pod), C(plugin_ready), C(pools), C(problems), C(total), C(allocated), C(free), C(tainted) devices).
  returned: always
  type: dict
limit_ranges:
  description: The namespace's LimitRange entries that mention GPU resources (C(max), C(min), C(default), ...).
  returned: always
  type: list
  elements: dict
queue_apis:
  description: Whether the C(kueue.x-k8s.io) and C(scheduling.volcano.sh) API groups are served.
  returned: always
  type: dict
  sample: {kueue.x-k8s.io: false, scheduling.volcano.sh: false}
summary:
  description: A short human summary, several lines - the first failing layer, then each finding and its fix.
  returned: always
  type: str
summary_lines:
  description: RV(summary) as a list of lines (for C(ansible.builtin.debug)).
  returned: always
  type: list
  elements: str
operator:
  description: The operator's names this run used and how each was found, as M(gpuops.gpu_operator.gpu_cluster_info)
    returns them (C(mode), C(namespace), C(namespace_source), C(cluster_policy), C(gpu_cluster),
    C(nvidia_drivers), C(problems)).
  returned: always
  type: dict
api_requests:
  description: HTTP requests made to the API server, retries and LIST pages included.
  returned: always
  type: int
"""


from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.k8s import (
    KUBERNETES,
    K8sError,
    module_client,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.args import (
    KUBECONFIG_ARG_SPEC,
    OPERATOR_NAMES_ARG_SPEC,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.errors import ArgumentError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.layers import merged_routes
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.module import run_module
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.triage.common import add_owners
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.triage.diagnose import Triage, diagnose


def argspec():
    spec = dict(KUBECONFIG_ARG_SPEC, **OPERATOR_NAMES_ARG_SPEC)
    spec.update(
        {
            "pod": {"type": "str"},
            "namespace": {"type": "str"},
            "node": {"type": "str"},
            "nvidia_gpu": {"type": "dict"},
            "log_lines": {"type": "int", "default": 20},
            "max_logs": {"type": "int", "default": 5},
            "page_size": {"type": "int", "default": 500},
            "routes": {"type": "dict"},
        }
    )
    return spec


def target_of(params):
    """``(target, error message)`` from the pod/namespace/node options."""
    pod, namespace, node = params["pod"], params["namespace"], params["node"]
    if node:
        return {"kind": "node", "namespace": None, "name": node}, None
    if pod:
        if "/" in pod:  # NAMESPACE/NAME, its form checked by the input rules (_core.inputs)
            ns, _sep, name = pod.partition("/")
            if namespace and namespace != ns:
                return None, "pod %r names namespace %s but namespace is %s; give one of them" % (pod, ns, namespace)
            return {"kind": "pod", "namespace": ns, "name": name}, None
        if not namespace:
            return None, "pod %r has no namespace: write it as NAMESPACE/NAME or set namespace" % pod
        return {"kind": "pod", "namespace": namespace, "name": pod}, None
    return {"kind": "namespace", "namespace": namespace, "name": None}, None


def execute_module(module):
    params = module.params
    routes = merged_routes(params["routes"])  # a bad route fails before any request
    target, error = target_of(params)
    if error:
        raise ArgumentError(error)
    client = module_client(module)
    triage = Triage(
        client,
        operator_namespace=params["operator_namespace"],
        page_size=params["page_size"],
        log_lines=params["log_lines"],
        max_logs=params["max_logs"],
        cluster_policy=params["cluster_policy"],
    )
    if target["kind"] == "node":
        try:
            snap = triage.read_node(target["name"], nvml=params["nvidia_gpu"])
        except K8sError as exc:
            if exc.status == 404:
                raise ArgumentError(
                    "node %s does not exist; give the name of a node (kubectl get nodes)" % target["name"]
                ) from exc
            raise
    else:
        snap = triage.read_pods(target["namespace"], target["name"])
    result = add_owners(diagnose(snap, target), routes)
    result["operator"] = triage.names.result()
    result["api_requests"] = client.requests
    result["changed"] = False
    return result


def main():
    run_module(
        argspec(),
        execute_module,
        requirements=[KUBERNETES],
        mutually_exclusive=[("pod", "node"), ("namespace", "node")],
        required_one_of=[("pod", "namespace", "node")],
        required_by={"nvidia_gpu": "node"},
        supports_check_mode=True,
    )


if __name__ == "__main__":
    main()
