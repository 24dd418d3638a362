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
  - By default the pod runs NVIDIA's CUDA vectoradd sample and passes when it exits 0 and its log contains
    C(Test PASSED); O(mode=nvidia-smi) runs C(nvidia-smi -L) instead. O(image), O(command) and
    O(expected_output) override either.
  - At most O(concurrency) pods exist at a time. Pods are watched with one paginated LIST per poll (label selector
    of the run), never a GET per pod; each finished pod's log is read, then the pod is deleted.
  - Cleanup always runs, also when the run fails or is interrupted; before a run, pods that an interrupted earlier
    run left behind are deleted (labels C(gpuops.io/smoke-test=true) and
    C(app.kubernetes.io/managed-by=gpuops.gpu_operator)).
    Each pod also carries C(activeDeadlineSeconds), so it ends itself if both guards are missed.
  - The run leaves nothing behind, so the module reports C(changed=false), unless it deleted leftovers of an
    earlier run (RV(swept)).
  - Needs RBAC C(list) on nodes, C(create), C(list), C(delete) on pods and C(get) on C(pods/log) in O(namespace),
    and C(list) on events there.
author:
  - gpuops.gpu_operator contributors (@gpuops)
requirements:
  - kubernetes >= 29.0.0 (Python library, for kubeconfig handling)
extends_documentation_fragment:
  - gpuops.gpu_operator.kubeconfig
  - gpuops.gpu_operator.attributes
  - gpuops.gpu_operator.attributes.CHECK_MODE_PLAN
  - gpuops.gpu_operator.attributes.NO_DIFF
  - gpuops.gpu_operator.attributes.PLATFORM_CLUSTER
  - gpuops.gpu_operator.attributes.ACTIONGROUP_CLUSTER
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
    description: The extended resource to request, for example V(nvidia.com/mig-1g.10gb) on a mixed-strategy MIG node.
    type: str
    default: nvidia.com/gpu
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
  - In check mode it creates nothing and returns the pods it would run in RV(planned).
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

- name: Every node passed
  ansible.builtin.assert:
    that: smoke.summary.all_passed
    fail_msg: "{{ smoke.nodes | dict2items | rejectattr('value.status', 'eq', 'passed')
                  | map(attribute='value') | map(attribute='node') | list }}"

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
"""

RETURN = r"""
nodes:
  description:
    - Per node tested, keyed by node name - C(node), C(pod), C(status) (V(passed), V(failed) or V(pending)),
      C(reason) (null when passed; for pending the scheduler's C(FailedScheduling) message), C(duration) (seconds
      from creation to the verdict), C(exit_code), C(resources) (what the pod requested) and C(logs) (the log tail).
  returned: always
  type: dict
  sample:
    gpu-h100-0: {node: gpu-h100-0, pod: gpuops-smoke-1a2b3c4d-gpu-h100-0, status: passed, reason: null,
                 duration: 7.2, exit_code: 0, resources: {nvidia.com/gpu: "1"}, logs: "... Test PASSED"}
    gpu-t4-0: {node: gpu-t4-0, pod: gpuops-smoke-1a2b3c4d-gpu-t4-0, status: pending,
               reason: "0/5 nodes are available: 1 Insufficient nvidia.com/gpu ...", duration: 60.4,
               exit_code: null, resources: {nvidia.com/gpu: "1"}, logs: null}
summary:
  description: C(passed), C(failed), C(pending), C(total) (nodes tested) and C(all_passed).
  returned: always
  type: dict
  sample: {passed: 2, failed: 0, pending: 1, total: 3, all_passed: false}
planned:
  description: In check mode, the pod of each node that would run (name, node, resources); empty otherwise.
  returned: always
  type: list
  elements: dict
swept:
  description: Pods of earlier, interrupted runs that were deleted before this run.
  returned: always
  type: list
  elements: str
leftovers:
  description: Pods of this run still present after cleanup (normally empty; the next run sweeps them).
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

import signal

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.k8s import (
    KUBERNETES,
    module_client,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.args import KUBECONFIG_ARG_SPEC, check_minimums
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.module import run_module
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import annotations_of, name_of
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.smoke import (
    DEFAULT_TOLERATIONS,
    MODES,
    NODE_ANNOTATION,
    SmokeError,
    SmokeRun,
    pod_spec,
    select_nodes,
    summarize,
)


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
        }
    )
    return spec


def _check_params(p):
    check_minimums(p, {"concurrency": 1, "timeout": 1, "schedule_timeout": 1})
    if p["poll_interval"] <= 0:
        raise SmokeError("poll_interval must be greater than 0, got %s" % p["poll_interval"])


def _terminate(signum, frame):  # Ansible's timeout and Ctrl-C end the module with SIGTERM/SIGINT: clean up first
    raise KeyboardInterrupt("signal %d" % signum)


def execute_module(module, client=None):
    p = module.params
    _check_params(p)
    mode = MODES[p["mode"]]
    image = p["image"] or mode["image"]
    command = p["command"] if p["command"] is not None else mode["command"]
    expected = p["expected_output"] if p["expected_output"] is not None else mode["expected_output"]
    tolerations = p["tolerations"] if p["tolerations"] is not None else list(DEFAULT_TOLERATIONS)
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

    def make_pod(run_id, node):
        return pod_spec(
            run_id,
            node,
            image,
            command=command,
            gpus=p["gpus"],
            resource=p["resource"],
            tolerations=tolerations,
            timeout=p["timeout"],
            labels=p["pod_labels"],
            runtime_class_name=p["runtime_class_name"],
            image_pull_secrets=p["image_pull_secrets"],
        )

    run = SmokeRun(
        client,
        p["namespace"],
        make_pod,
        concurrency=p["concurrency"],
        timeout=p["timeout"],
        schedule_timeout=p["schedule_timeout"],
        poll_interval=p["poll_interval"],
        expected_output=expected or None,
        collect_logs=p["collect_logs"],
    )
    names = [name_of(n) for n in selected]
    if module.check_mode:
        planned = [
            {
                "pod": name_of(pod),
                "node": annotations_of(pod)[NODE_ANNOTATION],
                "image": pod["spec"]["containers"][0]["image"],
                "resources": pod["spec"]["containers"][0]["resources"]["limits"],
            }
            for pod in run.plan(selected)
        ]
        return dict(
            changed=False,
            nodes={},
            summary=summarize({}, names),
            planned=planned,
            swept=[],
            leftovers=[],
            run_id=run.run_id,
            api_requests=client.requests,
        )
    previous = {sig: signal.signal(sig, _terminate) for sig in (signal.SIGTERM,)}
    try:
        if p["sweep"]:
            run.sweep()
        results = run.run(selected)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return dict(
        changed=bool(run.swept),
        nodes=results,
        summary=summarize(results, names),
        planned=[],
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
