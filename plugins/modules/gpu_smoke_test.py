#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: gpu_smoke_test
short_description: Run a GPU test pod on each selected node and report passed, failed or pending per node
description:
  - Runs one short-lived pod per selected node that requests O(gpus) GPUs, is pinned to its node with a required
    node affinity on C(kubernetes.io/hostname) and tolerates O(tolerations). The scheduler places it, so a node
    that cannot take it (no allocatable GPU, an untolerated taint, cordoned) leaves the pod Pending and the result
    carries the scheduler's C(FailedScheduling) message.
  - With O(allocation=claim) the GPUs come through Dynamic Resource Allocation (C(resource.k8s.io/v1)) instead of
    the C(nvidia.com/gpu) extended resource - the run creates one ResourceClaimTemplate (O(device_class), O(gpus)
    as the count or V(all) for allocation mode All, CEL selectors from O(product), O(mig_profile) and
    O(selectors)), and each pod references it through C(spec.resourceClaims) and its container's
    C(resources.claims). The resource-claim controller makes one claim per pod from it; the scheduler allocates a
    device of the pod's node. A pod that is scheduled but cannot start carries the kubelet's
    C(FailedPrepareDynamicResources) message.
  - O(admin_access=true) asks for the devices with C(adminAccess) - allowed even when other claims hold them, so a
    fully busy node can be validated. Kubernetes allows such claims only in a namespace labelled
    C(resource.kubernetes.io/admin-access=true); when O(namespace) lacks the label the run adds it and removes it
    again at the end (the next run's sweep removes it after an interrupted run).
  - By default the pod runs NVIDIA's CUDA vectoradd sample and passes when it exits 0 and its log contains
    C(Test PASSED); O(mode=nvidia-smi) runs C(nvidia-smi -L) instead. O(image), O(command) and
    O(expected_output) override either.
  - A pod scheduled but not started after O(schedule_timeout) is decided then (V(pending), with the kubelet's
    message) when the kubelet says it cannot start it - its sandbox cannot be created (C(FailedCreatePodSandBox)) or
    its claims cannot be prepared; a pod the kubelet refuses at admission fails with the kubelet's reason (no log is
    read, none exists).
  - At most O(concurrency) pods exist at a time. Pods are watched with one paginated LIST per poll (label selector
    of the run), never a GET per pod; each finished pod's log is read, then the pod is deleted.
  - Cleanup always runs, also when the run fails or is interrupted; before a run, pods that an interrupted earlier
    run left behind are deleted (labels C(gpuops.io/smoke-test=true) and
    C(app.kubernetes.io/managed-by=gpuops.gpu_operator)), and so are its claim templates and the admin-access label
    it set. In claim mode cleanup deletes the run's template and waits until the claims made from it are gone with
    their pods. Each pod also carries C(activeDeadlineSeconds), so it ends itself if both guards are missed.
  - The run leaves nothing behind, so the module reports C(changed=false), unless it deleted leftovers of an
    earlier run (RV(swept)).
  - Needs RBAC C(list) on nodes, C(create), C(list), C(delete) on pods and C(get) on C(pods/log) in O(namespace),
    and C(list) on events there; C(list), C(create) and C(delete) on C(resourceclaimtemplates) and C(list) on
    C(resourceclaims) (C(resource.k8s.io)) there, and C(get) and C(patch) on the namespace for O(admin_access).
author:
  - gpuops.gpu_operator contributors (@gpuops)
extends_documentation_fragment:
  - gpuops.gpu_operator.kubeconfig
  - gpuops.gpu_operator.attributes
  - gpuops.gpu_operator.attributes.CHECK_MODE_PLAN
  - gpuops.gpu_operator.attributes.NO_DIFF
  - gpuops.gpu_operator.attributes.CLUSTER
options:
  nodes:
    description:
      - Names of the nodes to test. When omitted, every GPU node (as M(gpuops.gpu_operator.gpu_cluster_info)
        defines it) that matches O(label_selector).
    type: list
    elements: str
  label_selector:
    description: Label selector applied by the API server to the node LIST, for example V(gpuops.io/pool=canary).
    type: str
  sample:
    description: Test only this many randomly chosen nodes of the selection. Mutually exclusive with O(percent).
    type: int
  percent:
    description: Test this percentage of the selection (rounded up, at least one node), chosen at random.
    type: float
  seed:
    description: Seed for the random choice of O(sample) or O(percent), to make it repeatable.
    type: int
  gpus:
    description:
      - GPUs each pod requests, a positive integer, or V(all) for the node's allocatable O(resource)
        (1 on a node that advertises none, so that its pod stays Pending and the scheduler says why).
    type: str
    default: "1"
  resource:
    description:
      - The extended resource to request, for example V(nvidia.com/mig-1g.10gb) on a mixed-strategy MIG node.
      - Only with O(allocation=resource).
    type: str
    default: nvidia.com/gpu
  allocation:
    description:
      - V(resource) requests O(resource), the device plugin's extended resource.
      - V(claim) requests the GPUs through a DRA ResourceClaim made from the run's ResourceClaimTemplate, for
        clusters where GPUs reach pods through DRA (the GPU Operator's GPUCluster mode).
    type: str
    choices: [resource, claim]
    default: resource
  device_class:
    description:
      - The DeviceClass of the claim. The default is V(gpu.nvidia.com), or V(mig.nvidia.com) when O(mig_profile)
        is set.
      - Only with O(allocation=claim).
    type: str
  product:
    description:
      - Only devices whose C(productName) attribute is this, for example V(NVIDIA H100 80GB HBM3) (the DRA driver
        writes the name as NVML does, with spaces, unlike the GFD label C(nvidia.com/gpu.product)).
      - Only with O(allocation=claim).
    type: str
  mig_profile:
    description:
      - Only MIG devices of this profile, for example V(1g.10gb) (their C(profile) attribute).
      - Only with O(allocation=claim).
    type: str
  selectors:
    description:
      - More CEL selectors the devices must match, for example
        V(device.attributes['gpu.nvidia.com'].driverVersion.isGreaterThan(semver('570.0.0'\))).
      - Only with O(allocation=claim).
    type: list
    elements: str
  admin_access:
    description:
      - Claim the devices with admin access, which is granted even when other claims hold them (a busy node can
        be tested). The namespace needs, and gets for the run, the label
        C(resource.kubernetes.io/admin-access=true).
      - Only with O(allocation=claim).
    type: bool
    default: false
  dra_driver:
    description: The DRA driver whose attributes O(product) and O(mig_profile) select on.
    type: str
    default: gpu.nvidia.com
  mode:
    description:
      - V(vectoradd) runs C(nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0) and expects C(Test PASSED).
      - V(nvidia-smi) runs C(nvidia-smi -L) in C(nvcr.io/nvidia/cuda:12.5.0-base-ubuntu22.04) and expects C(GPU 0:).
    type: str
    choices: [vectoradd, nvidia-smi]
    default: vectoradd
  image:
    description: Container image, overriding the one of O(mode).
    type: str
  command:
    description: Container command (entrypoint and arguments), overriding the one of O(mode).
    type: list
    elements: str
  expected_output:
    description:
      - Text the pod's log must contain for the test to pass, overriding the one of O(mode).
      - An empty string passes on exit code 0 alone.
    type: str
  tolerations:
    description:
      - Tolerations of the pods, as in a pod spec. The default tolerates C(nvidia.com/gpu:NoSchedule) with any value.
    type: list
    elements: dict
  pod_labels:
    description: Extra labels on every pod (the module's own labels win).
    type: dict
    default: {}
  runtime_class_name:
    description: C(runtimeClassName) of the pods, for example V(nvidia) where the NVIDIA runtime is not the default.
    type: str
  image_pull_secrets:
    description: Names of image pull secrets in O(namespace).
    type: list
    elements: str
  namespace:
    description: Namespace of the test pods. It must exist.
    type: str
    default: default
  concurrency:
    description: Pods in flight at a time.
    type: int
    default: 10
  timeout:
    description: Seconds a pod may take from creation to completion before its node counts as failed (or pending).
    type: int
    default: 300
  schedule_timeout:
    description:
      - Seconds a pod may stay unscheduled before its node counts as pending (capped at O(timeout)).
      - With DRA claims, also the seconds a scheduled pod may wait while the kubelet cannot prepare its claims (a
        C(FailedPrepareDynamicResources) event, the DRA kubelet plugin not running) before its node counts as pending
        with the kubelet's message.
    type: int
    default: 60
  poll_interval:
    description: Seconds between two LISTs of the run's pods.
    type: float
    default: 1.0
  collect_logs:
    description: Return the last 50 lines of each pod's log in the result.
    type: bool
    default: true
  sweep:
    description: Delete leftovers of earlier runs before this one.
    type: bool
    default: true
notes:
  - Run one smoke test per namespace at a time; the sweep deletes the pods of any earlier run in O(namespace).
  - In check mode it creates nothing and returns the pods it would run in RV(planned) and, in claim mode, the
    template in RV(claim_template) and whether it would label the namespace in RV(namespace_labelled).
  - There is no diff; the run leaves no object behind.
seealso:
  - module: gpuops.gpu_operator.gpu_cluster_info
  - module: kubernetes.core.k8s_info
    description: The smoke pods of a run, by label C(gpuops.io/smoke-test-run=<run_id>), while it runs.
"""

EXAMPLES = r"""
- name: One GPU on every GPU node, CUDA vectoradd
  gpuops.gpu_operator.gpu_smoke_test:
    kubeconfig: ~/.kube/config
  register: smoke

- name: Every node passed (check mode runs no pod - smoke.planned holds the pods it would run)
  ansible.builtin.assert:
    that: smoke.summary.all_passed
    fail_msg: "{{ smoke.nodes | dict2items | rejectattr('value.status', 'eq', 'passed')
                  | map(attribute='value') | map(attribute='node') | list }}"
  when: not ansible_check_mode

- name: All GPUs of 10 percent of the H100 pool, nvidia-smi, tainted nodes tolerated
  gpuops.gpu_operator.gpu_smoke_test:
    label_selector: nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3
    percent: 10
    gpus: all
    mode: nvidia-smi
    tolerations:
      - {key: dedicated, operator: Equal, value: gpu, effect: NoSchedule}
    concurrency: 20
    timeout: 120

- name: One GPU through DRA on every GPU node (GPU Operator in GPUCluster mode)
  gpuops.gpu_operator.gpu_smoke_test:
    allocation: claim
    mode: nvidia-smi

- name: Every GPU of the busy H100 nodes, beside the workloads holding them
  gpuops.gpu_operator.gpu_smoke_test:
    allocation: claim
    admin_access: true
    gpus: all
    product: NVIDIA H100 80GB HBM3
    namespace: gpuops-smoke
    mode: nvidia-smi

- name: One 1g.10gb MIG device per node
  gpuops.gpu_operator.gpu_smoke_test:
    allocation: claim
    mig_profile: 1g.10gb
"""

RETURN = r"""
nodes:
  description:
    - Per node tested, keyed by node name - C(node), C(pod), C(status) (V(passed), V(failed) or V(pending)),
      C(reason) (null when passed; for pending the scheduler's C(FailedScheduling) message, or the kubelet's
      C(FailedPrepareDynamicResources) or C(FailedCreatePodSandBox) message for a scheduled pod that did not start;
      for a pod the kubelet refused, its reason and message, such as C(UnexpectedAdmissionError)), C(duration) (seconds
      from creation to the verdict), C(exit_code), C(resources) (what the pod requested - the resource and its
      count, or in claim mode the device class and the count, V(all) for every matching device), C(devices) (claim
      mode - the devices its claim got, as C(pool/device); null otherwise) and C(logs) (the log tail).
  returned: always
  type: dict
  sample:
    gpu-h100-0: {node: gpu-h100-0, pod: gpuops-smoke-1a2b3c4d-gpu-h100-0, status: passed, reason: null,
                 duration: 7.2, exit_code: 0, resources: {nvidia.com/gpu: "1"}, devices: null, logs: "... Test PASSED"}
    gpu-b200-0: {node: gpu-b200-0, pod: gpuops-smoke-1a2b3c4d-gpu-b200-0, status: passed, reason: null,
                 duration: 3.1, exit_code: 0, resources: {gpu.nvidia.com: "1"}, devices: [gpu-b200-0/gpu-3],
                 logs: "GPU 0: NVIDIA B200 (UUID: GPU-...)"}
    gpu-t4-0: {node: gpu-t4-0, pod: gpuops-smoke-1a2b3c4d-gpu-t4-0, status: pending,
               reason: "0/5 nodes are available: 1 Insufficient nvidia.com/gpu ...", duration: 60.4,
               exit_code: null, resources: {nvidia.com/gpu: "1"}, devices: null, logs: null}
summary:
  description: C(passed), C(failed), C(pending), C(total) (nodes tested) and C(all_passed).
  returned: always
  type: dict
  sample: {passed: 2, failed: 0, pending: 1, total: 3, all_passed: false}
planned:
  description: In check mode, the pod of each node that would run (pod, node, image, resources); empty otherwise.
  returned: always
  type: list
  elements: dict
claim_template:
  description: In claim mode, the ResourceClaimTemplate of the run (in check mode, the one it would create); else null.
  returned: always
  type: dict
namespace_labelled:
  description:
    - Whether the run labelled O(namespace) C(resource.kubernetes.io/admin-access=true) for O(admin_access) (and
      removed the label at its end); in check mode, whether it would.
  returned: always
  type: bool
swept:
  description:
    - What earlier, interrupted runs left and this run deleted before it started - pod names,
      C(resourceclaimtemplate/NAME), and C(namespace/NAME label resource.kubernetes.io/admin-access).
  returned: always
  type: list
  elements: str
leftovers:
  description:
    - What of this run was still present after cleanup (normally empty; the next run sweeps it) - pod names and,
      in claim mode, C(resourceclaim/NAME).
  returned: always
  type: list
  elements: str
run_id:
  description: The value of label C(gpuops.io/smoke-test-run) on this run's pods.
  returned: always
  type: str
api_requests:
  description: HTTP requests made to the API server.
  returned: always
  type: int
"""

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.k8s import (
    KUBERNETES,
    module_client,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.args import KUBECONFIG_ARG_SPEC
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.module import run_module
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import name_of
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.smoke import (
    SmokeError,
    SmokeRun,
    gpus_for,
    run_labels,
    run_selector,
    select_nodes,
    summarize,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.smoke_claims import claim_setup
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.smoke_options import MODES, SmokeOptions


def argspec():
    spec = dict(KUBECONFIG_ARG_SPEC)
    spec.update(
        {
            "nodes": {"type": "list", "elements": "str"},
            "label_selector": {"type": "str"},
            "sample": {"type": "int"},
            "percent": {"type": "float"},
            "seed": {"type": "int"},
            "gpus": {"type": "str", "default": "1"},
            "resource": {"type": "str", "default": "nvidia.com/gpu"},
            "mode": {"type": "str", "choices": sorted(MODES), "default": "vectoradd"},
            "image": {"type": "str"},
            "command": {"type": "list", "elements": "str"},
            "expected_output": {"type": "str"},
            "tolerations": {"type": "list", "elements": "dict"},
            "pod_labels": {"type": "dict", "default": {}},
            "runtime_class_name": {"type": "str"},
            "image_pull_secrets": {"type": "list", "elements": "str", "no_log": False},  # names of Secrets, not secrets
            "namespace": {"type": "str", "default": "default"},
            "concurrency": {"type": "int", "default": 10},
            "timeout": {"type": "int", "default": 300},
            "schedule_timeout": {"type": "int", "default": 60},
            "poll_interval": {"type": "float", "default": 1.0},
            "collect_logs": {"type": "bool", "default": True},
            "sweep": {"type": "bool", "default": True},
            "allocation": {"type": "str", "choices": ["resource", "claim"], "default": "resource"},
            "device_class": {"type": "str"},
            "product": {"type": "str"},
            "mig_profile": {"type": "str"},
            "selectors": {"type": "list", "elements": "str"},
            "admin_access": {"type": "bool", "default": False},
            "dra_driver": {"type": "str", "default": "gpu.nvidia.com"},
        }
    )
    return spec


def _check_params(p):
    gpus_for({}, p["gpus"])  # a positive integer or all


def execute_module(module, client=None):
    p = module.params
    _check_params(p)
    client = client or module_client(module)

    nodes = client.list_core("nodes", label_selector=p["label_selector"], page_size=2000)
    selected = select_nodes(
        nodes,
        names=p["nodes"],
        sample=p["sample"],
        percent=p["percent"],
        seed=p["seed"],
        gpu_nodes_only=not p["label_selector"],
    )

    run = SmokeRun(client, SmokeOptions.from_params(p))
    run.claims = claim_setup(
        client, p, run.run_id, run_labels(run.run_id), run_selector(run.run_id), page_size=run.page_size
    )
    template = run.claims.template if run.claims else None
    names = [name_of(n) for n in selected]
    if module.check_mode:
        planned = run.plan(selected)
        return dict(
            changed=False,
            nodes={},
            summary=summarize({}, names),
            planned=planned,
            claim_template=template,
            namespace_labelled=bool(run.claims and run.claims.needs_label()),
            swept=[],
            leftovers=[],
            run_id=run.run_id,
            api_requests=client.requests,
        )
    if p["sweep"]:
        run.sweep()
    results = run.run(selected)  # SIGTERM/SIGINT raise KeyboardInterrupt here (run_module): the run deletes its pods
    return dict(
        changed=bool(run.swept),
        nodes=results,
        summary=summarize(results, names),
        planned=[],
        claim_template=template,
        namespace_labelled=bool(run.claims and run.claims.labelled),
        swept=run.swept,
        leftovers=run.leftovers,
        run_id=run.run_id,
        api_requests=client.requests,
    )


def execute_or_fail(module):
    try:
        return execute_module(module)
    except KeyboardInterrupt as exc:
        raise SmokeError("interrupted (%s); this run's pods were deleted" % exc) from exc


def main():
    run_module(
        argspec(),
        execute_or_fail,
        requirements=[KUBERNETES],
        supports_check_mode=True,
        mutually_exclusive=[("sample", "percent")],
    )


if __name__ == "__main__":
    main()
