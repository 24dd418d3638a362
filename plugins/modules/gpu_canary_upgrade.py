#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: gpu_canary_upgrade
short_description: Cluster-side steps of a canary GPU driver upgrade - plan, prepare, wave, finish, rollback, status
description:
  - Moves GPU nodes to a new driver version in waves, a canary pool first, through the GPU Operator's own upgrade
    controller. Every node that is not in the current wave carries the skip label
    C(nvidia.com/gpu-driver-upgrade.skip=true), so the controller leaves it in C(upgrade-required) on its old driver.
  - The progress record (the plan, each wave's status, the nodes it labelled) is a ConfigMap in the operator
    namespace (see O(operator_namespace)), so a second run with the same target continues where the first stopped.
  - O(step=plan) reads the cluster and returns the plan (waves and their nodes, labels, taints, the nodes someone else
    quarantined - see O(foreign_quarantine)) and the gate (nodes in C(upgrade-failed), PodDisruptionBudgets, GPU jobs,
    the CUDA versions of running workloads, and a change the operator would never make - a driver version where the
    driver is preinstalled or disabled, a toolkit, device plugin or MIG setting in O(chart_values) where that operand is
    disabled). Read-only.
  - O(step=prepare) saves the record (what it is about to change, as it was), skip-labels every node not yet proven,
    makes the operands (ClusterPolicy C(spec.daemonsets.tolerations)) and the NFD worker tolerate the canary taint, then
    points the ClusterPolicy (or every NVIDIADriver) at O(driver_version) with O(upgrade_policy). The gate must pass.
  - O(step=wave) taints the wave's nodes, waits for or evicts their GPU pods (Eviction API, so
    PodDisruptionBudgets hold; pods matching O(wait_for_completion_selector) are waited for), removes their skip
    label, waits for C(upgrade-done) on the target driver, then proves each node (driver label, allocatable equals
    capacity, validator and operand pods ready and on their DaemonSet's images, no new Xid event, DCGM XID errors
    when O(dcgm_url) is set). It stops at the first failed node, and when nothing can progress - no node of the
    wave moves (upgrade state or driver) for O(stall_grace) seconds and none is in progress.
  - Every wait returns after O(progress_interval) seconds with RV(progress) (where it stands, C(waiting=true));
    calling the same step again with O(continue_wait=true) goes on with the same deadlines.
  - O(step=finish_wave) records the caller's own proof (smoke pods, test workloads). V(passed=true) removes the
    canary taint and marks the wave proven; after the last wave it removes the skip labels it set and takes back
    the update strategy and the upgrade policy (the canary tolerations stay - every operand pod carries them -
    and C(kept) in RV(status) names them).
  - On the first failure (O(step=wave), or O(step=finish_wave) with V(passed=false)) it aborts - the wave's nodes
    stay tainted, failed nodes get the annotation C(gpuops.io/canary-upgrade-failed) saying why, nodes the
    controller has not started get their skip label back - and fails with the reason, what is left on the cluster
    and what to run next.
  - O(step=rollback) needs no target (the record has it). It points the driver back at the record's source
    version, clears the failure annotations and taints, removes the skip labels, waits up to O(wave_timeout) for
    every planned node whose driver the operator manages to run it again, then takes back the preparation. A
    rollback that fails says which nodes did not come back; running it again finishes it.
  - O(step=status) needs no target and only reads - the recorded plan and phase, each planned node's state, the
    reason of the last failure, what a canary upgrade left on the cluster (C(leftovers) of RV(status)) and what to run
    next.
author:
  - gpuops.gpu_operator contributors (@gpuops)
extends_documentation_fragment:
  - gpuops.gpu_operator.kubeconfig
  - gpuops.gpu_operator.quarantine
  - gpuops.gpu_operator.operator_names
  - gpuops.gpu_operator.attributes
  - gpuops.gpu_operator.attributes.CHECK_MODE_PLAN
  - gpuops.gpu_operator.attributes.NO_DIFF
  - gpuops.gpu_operator.attributes.CLUSTER
notes:
  - Needs the RBAC rules of the collection's C(docs/rbac.yml) - patch on nodes, ClusterPolicies and NVIDIADrivers,
    ConfigMaps in O(operator_namespace), C(create) on C(pods/eviction), C(list) on PodDisruptionBudgets, events
    and pods.
  - In check mode no step writes anything; O(step=plan) returns the plan, O(step=status) the status, and the other
    steps return the changes they would make in RV(changes).
  - There is no diff; the changes a step makes, or would make, are listed in RV(changes).
seealso:
  - name: Canary upgrade guide
    description: docs/canary-upgrade.md in this collection.
    link: https://github.com/gpuops/gpu_operator/blob/main/docs/canary-upgrade.md
options:
  step:
    description: Which step to run (see the description).
    type: str
    choices: [plan, prepare, wave, finish_wave, rollback, status]
    default: plan
  driver_version:
    description: Target driver version, for example V(610.57.04). Every step but O(step=rollback) and
      O(step=status) needs O(driver_version), O(chart_version) or both.
    type: str
  chart_version:
    description:
      - Target GPU Operator chart version; recorded in the plan. The chart upgrade itself runs through
        M(gpuops.gpu_operator.gpu_operator) after O(step=prepare).
    type: str
  chart_values:
    description:
      - The chart values the chart upgrade will apply. The gate refuses a toolkit (C(toolkit)), device plugin
        (C(devicePlugin)) or MIG (C(migManager), C(mig)) setting that differs from the ClusterPolicy where that
        operand is disabled (C(enabled=false), or the node's C(nvidia.com/gpu.deploy.*) label).
    type: dict
    default: {}
  canary_nodes:
    description: Node names of the canary pool (for example the k8s node names of inventory group C(gpu_canary)).
    type: list
    elements: str
    default: []
  canary_selector:
    description: Label selector of the canary pool, used when O(canary_nodes) is empty, e.g. V(gpuops.io/canary=true).
    type: str
    default: ''
  waves:
    description:
      - Cumulative sizes of the waves after the canary, over the other GPU nodes, as node counts or percentages
        (rounded up), for example V([1, "10%", "25%", "100%"]). Nodes beyond the last entry are not upgraded and keep
        the skip label (C(plan.unplanned)).
    type: list
    elements: raw
    default: ['100%']
  exclude:
    description: GPU nodes to leave out of the plan (nodes that carry the skip label already are left out too).
    type: list
    elements: str
    default: []
  foreign_quarantine:
    description:
      - What the plan does with a GPU node that someone else took out of service - a fault-remediation system (a
        known marker - taint, annotation or node condition - of NVSentinel or node-problem-detector, or one of
        O(quarantine_markers)) or a cordon that the operator's upgrade controller does not hold.
      - V(skip) leaves such a node out of the waves and never uncordons, untaints or drains it (O(step=prepare) only
        holds it with the skip label, so the upgrade controller does not upgrade it either); it is listed with its
        evidence in C(plan.foreign_quarantine), apart from failures. The gate fails only when the quarantined nodes
        that are cordoned or NotReady use the whole C(maxUnavailable) of the upgrade controller (C(plan.budget)).
      - V(fail) makes the gate refuse to start while a quarantined node is not in O(exclude).
    type: str
    choices: [skip, fail]
    default: skip
  taint_key:
    description: Key of the canary taint.
    type: str
    default: gpuops.io/canary-upgrade
  taint_effect:
    description: Effect of the canary taint.
    type: str
    choices: [NoSchedule, PreferNoSchedule, NoExecute]
    default: NoSchedule
  record_name:
    description: Name of the progress ConfigMap.
    type: str
    default: gpuops-canary-upgrade
  upgrade_policy:
    description:
      - Keys merged into the ClusterPolicy's C(spec.driver.upgradePolicy) by O(step=prepare), for example
        C(autoUpgrade), C(maxParallelUpgrades) (V(0) is unlimited) and C(maxUnavailable) (a count or a percentage).
    type: dict
    default: {autoUpgrade: true}
  hold_operands:
    description:
      - With V(true), O(step=prepare) switches the operand DaemonSets to C(OnDelete) (ClusterPolicy
        C(spec.daemonsets.updateStrategy)), so that neither the canary toleration nor a chart upgrade restarts operands
        outside the current wave; O(step=wave) renews the operand pods of its nodes whose images differ from their
        DaemonSet's, and the last O(step=finish_wave) restores the original strategy.
    type: bool
    default: true
  wave:
    description: Index of the wave (C(plan.waves[].index)) for O(step=wave) and O(step=finish_wave).
    type: int
  eviction:
    description:
      - What O(step=wave) does with GPU pods on the wave's nodes before it releases them - V(evict) them through the
        Eviction API (retried while a PodDisruptionBudget refuses), V(wait) until they finish, or V(none) (the
        operator's upgrade controller deletes them). Nodes whose driver the plan restarts in place are left alone.
    type: str
    choices: [evict, wait, none]
    default: evict
  max_evicted_workloads:
    description:
      - The gate fails, before any write, when the plan's C(disruption) evicts more GPU workload pods than this,
        naming the count, the nodes and the fix. Unset, any number is allowed.
    type: int
  wait_for_completion_selector:
    description: Label selector of GPU pods that are always waited for, never evicted.
    type: str
    default: ''
  cuda_images:
    description:
      - How the gate learns the CUDA version of GPU workload images that are not NVIDIA CUDA images (the tag of
        C(nvidia/cuda) and C(nvcr.io/nvidia/cuda) images, such as V(12.4.1-base-ubuntu22.04), is read without a rule).
      - Each entry has C(image), a Python regular expression searched in the image reference, and either C(cuda),
        the CUDA version (V(12.4)) of the images it matches, or a group in the regex (named C(cuda), else the first)
        that captures it. The first matching entry wins, before the NVIDIA tag rule.
      - A GPU container whose CUDA version stays unknown is listed in C(plan.gate.cuda.unknown) and fails nothing.
    type: list
    elements: dict
    default: []
  eviction_timeout:
    description: Seconds to wait for GPU pods to finish or be evicted before the wave aborts.
    type: int
    default: 600
  wave_timeout:
    description: Seconds a wave's nodes may take to reach C(upgrade-done) before the wave aborts (and the rollback's
      nodes to come back).
    type: int
    default: 1800
  stall_grace:
    description:
      - Seconds in which some node of a released wave (or of the rollback) must show upgrade progress - a new upgrade
        state or driver. When none moves for that long and none is in progress (for example no upgrade state ever
        appears, because the operator does not run its upgrade controller or does not manage the driver), the wave
        stops early instead of waiting for O(wave_timeout).
    type: int
    default: 180
  progress_interval:
    description:
      - Seconds a wait may run before the step returns RV(progress) with C(waiting=true); V(0) waits to the end.
    type: int
    default: 30
  continue_wait:
    description:
      - Set when calling the same step again after it returned C(progress.waiting=true) - the waits keep the
        deadlines and the last movement of the calls before instead of starting afresh.
    type: bool
    default: false
  proof_timeout:
    description: Seconds the cluster-side proof may wait for operands and allocatable GPUs to settle.
    type: int
    default: 180
  poll_interval:
    description: Seconds between polls (each poll is a few LIST requests).
    type: float
    default: 2.0
  dcgm_url:
    description: URL of DCGM exporter metrics (Prometheus text); a node with C(DCGM_FI_DEV_XID_ERRORS) above 0 fails.
    type: str
  passed:
    description: For O(step=finish_wave), whether the caller's proof passed.
    type: bool
    default: true
  reason:
    description: For O(step=finish_wave) with O(passed=false), why the proof failed (stored in the annotation).
    type: str
    default: ''
  failed_nodes:
    description: For O(step=finish_wave) with O(passed=false), the nodes that failed (default every node of the wave).
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
# Every step of one upgrade, in order, each with the same target, canary pool and waves. The gpu_canary_upgrade role
# (playbooks/upgrade.yml) runs them the same way, with the chart upgrade after prepare and a smoke test as the proof.
- name: Plan the upgrade of inventory group gpu_canary's nodes (k8s_node_name; read-only, the gate names refusals)
  gpuops.gpu_operator.gpu_canary_upgrade:
    step: plan
    driver_version: 610.57.04
    canary_nodes: "{{ groups['gpu_canary'] | map('extract', hostvars, 'k8s_node_name') | list }}"
    waves: [1, "25%", "100%"]
  register: canary_plan
  failed_when: canary_plan is failed or not canary_plan.plan.gate.passed  # stop before any write

- name: Prepare - operands tolerate the canary taint, the driver upgrade policy is set, every GPU node is held
  gpuops.gpu_operator.gpu_canary_upgrade:
    step: prepare
    driver_version: 610.57.04
    canary_nodes: "{{ groups['gpu_canary'] | map('extract', hostvars, 'k8s_node_name') | list }}"
    waves: [1, "25%", "100%"]
    upgrade_policy: {autoUpgrade: true, maxParallelUpgrades: 1, maxUnavailable: "25%"}

- name: Upgrade wave 0, the canary pool (taint, evict GPU pods, release, wait for upgrade-done)
  gpuops.gpu_operator.gpu_canary_upgrade:
    step: wave
    wave: 0
    driver_version: 610.57.04
    canary_nodes: "{{ groups['gpu_canary'] | map('extract', hostvars, 'k8s_node_name') | list }}"
    waves: [1, "25%", "100%"]
    eviction: evict
    wait_for_completion_selector: training.example.com/checkpointing=true
  register: canary_wave

- name: Prove the canary pool with a smoke pod per node
  gpuops.gpu_operator.gpu_smoke_test:
    nodes: "{{ canary_wave.wave.wave.nodes }}"  # the wave's planned nodes (wave.nodes holds each node's proof)
    tolerations:
      - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
      - {key: gpuops.io/canary-upgrade, operator: Exists, effect: NoSchedule}
  register: canary_smoke
  ignore_errors: true

- name: Record the proof (passed=false aborts - the wave stays tainted and annotated, every other node held)
  gpuops.gpu_operator.gpu_canary_upgrade:
    step: finish_wave
    wave: 0
    driver_version: 610.57.04
    canary_nodes: "{{ groups['gpu_canary'] | map('extract', hostvars, 'k8s_node_name') | list }}"
    waves: [1, "25%", "100%"]
    passed: "{{ canary_smoke is succeeded }}"
    reason: "{{ canary_smoke.msg | default('') }}"

# Then wave and finish_wave again for waves 1, 2, ... (canary_plan.plan.next_wave is the next one to run).

- name: Where the upgrade stands (read-only, no target needed) - the record, each node, what is left, what to run
  gpuops.gpu_operator.gpu_canary_upgrade: {step: status}
  register: canary_status

- name: After an abort, roll back to the versions the record started from (no target needed), a line every 30 s
  gpuops.gpu_operator.gpu_canary_upgrade:
    step: rollback
    continue_wait: "{{ poll > 0 }}"
  register: canary_rollback
  when: canary_status.status.phase == 'aborted'
  loop: "{{ range(0, 100) | list }}"
  loop_control:
    loop_var: poll
    label: "{{ canary_rollback.progress.lines | default([]) | join('; ') }}"
    break_when:
      - canary_rollback is skipped or canary_rollback is failed or not canary_rollback.progress.waiting
"""

RETURN = r"""
plan:
  description:
    - For every step but O(step=rollback) and O(step=status), the plan - C(target) and C(from) versions (C(from) also
      holds C(running), the driver versions the GPU nodes run with their node counts), C(mode)
      (V(clusterpolicy) or V(nvidiadriver)), C(taint), C(skip_label), C(waves) (C(index), C(name), C(nodes),
      C(status), C(taint)), C(next_wave), C(unplanned), C(excluded), C(foreign_quarantine) (per GPU node someone
      else took out of service - C(node), C(owners), C(evidence) (C(kind) - V(taint), V(annotation), V(condition)
      or V(cordon) -, C(key), C(owner) and the taint's C(value) and C(effect), the annotation's C(value) or the
      condition's C(reason) and C(message)), C(counts_against_max_unavailable) and C(fix)), C(budget)
      (C(max_unavailable), C(gpu_nodes), C(allowed), C(used_by_quarantine), C(left)), C(resumed), C(phase), and
      C(gate) (C(passed), C(failures), C(unmanaged) (per operand, the planned nodes it does not run on and why),
      C(pdbs), C(gpu_jobs), and C(cuda) - C(target_driver), C(workloads) with C(pod), C(node), C(container), C(image),
      C(cuda), C(required_driver), C(ok), and C(unknown)), C(tolerations) (what the chart upgrade must keep of the
      preparation), C(switches) (each ClusterPolicy section's C(enabled), which a chart upgrade keeps) and
      C(disruption) - C(release), C(in_place) and C(full) (node names), C(evicted_workloads), C(client_label), and
      per planned node C(node), C(driver_restart) (V(in-place), V(full) or V(none)), C(reason), C(evicted) (GPU
      pods) and C(clients) (pods of DaemonSets selecting C(nvidia.com/gpu.deploy.client)).
  returned: unless O(step) is V(rollback) or V(status)
  type: dict
  sample:
    target: {driver_version: 610.57.04, chart_version: null}
    waves:
      - {index: 0, name: canary, nodes: [h100-0], status: pending, taint: "gpuops.io/canary-upgrade=canary:NoSchedule"}
    foreign_quarantine:
      - {node: h100-5, owners: [NVSentinel], counts_against_max_unavailable: true, evidence: [
          {kind: taint, key: nvidia.com/gpu-xid-error, value: "true", effect: NoSchedule, owner: NVSentinel},
          {kind: cordon, key: spec.unschedulable, owner: NVSentinel}]}
    budget: {max_unavailable: 25%, gpu_nodes: 20, allowed: 5, used_by_quarantine: [h100-5], left: 4}
    gate:
      {passed: true, failures: [], pdbs: [], gpu_jobs: [], cuda: {target_driver: 610.57.04, workloads: [], unknown: []}}
record:
  description: The progress record after the step (as stored in the ConfigMap).
  returned: unless O(step) is V(status)
  type: dict
  sample: {phase: in-progress, waves: [{index: 0, name: canary, status: proven}]}
wave:
  description: For O(step=wave) and O(step=finish_wave), the wave with C(status); for O(step=wave) also C(nodes)
    (per node C(driver_version), C(upgrade_state), C(allocatable), C(capacity), C(problems)) and C(evicted).
  returned: when O(step) is V(wave) or V(finish_wave)
  type: dict
  sample: {wave: {index: 0, status: upgraded}, nodes: {h100-0: {driver_version: 610.57.04, problems: []}}}
progress:
  description:
    - For O(step=wave) and O(step=rollback), where the last wait stands - C(waiting) (true when the step returned
      before the wait ended; call it again with O(continue_wait=true)), C(lines) (the counts and elapsed time, then
      each node that is not done with its upgrade state and what it waits for) and, for the driver upgrade, the node
      names C(done), C(in_progress), C(not_started) and C(failed).
  returned: when O(step) is V(wave) or V(rollback)
  type: dict
  sample:
    waiting: true
    lines: ["canary: 1 of 2 nodes done, 1 in progress, 0 not started, 0 failed (30 s of at most 1800 s)",
            "h100-0: pod-restart-required, driver 580.1, waiting for the new driver pod to run and be ready"]
switches:
  description: For O(step=rollback), each ClusterPolicy section's C(enabled) (what a chart rollback keeps).
  returned: when O(step) is V(rollback)
  type: dict
  sample: {driver: {enabled: false}, toolkit: {enabled: true}}
status:
  description:
    - For O(step=status) - C(record), C(phase) (null without a record), C(unfinished), C(target), C(from),
      C(started), C(updated), C(reason) (the last failure), C(waves) (C(index), C(name), C(status), C(reason),
      C(nodes)), C(nodes) (per planned node C(upgrade_state), C(driver_version), C(skip), C(tainted), C(cordoned),
      C(failure)), C(upgrades) (per node whose driver upgrade is not done C(node), C(state), C(since), C(seconds),
      C(cause), C(fix), C(stalled)), C(foreign_quarantine) (per node the record left out because someone else
      quarantined it, its state as in C(nodes) and its C(evidence) now), C(leftovers) (what a canary upgrade left),
      C(kept) (the tolerations a finished upgrade keeps), C(next) (what to run) and C(lines).
    - C(policy_status) reads the ClusterPolicy's state for the release that runs (C(release), C(upgrading), C(meaning)
      V(ready), V(not-ready), V(upgrading) or V(not-proven), C(text)); the canary never takes it as proof.
  returned: when O(step) is V(status)
  type: dict
  sample:
    phase: aborted
    unfinished: true
    leftovers: ["the progress record (phase aborted)", "the canary taint gpuops.io/canary-upgrade on 1 node(s): h-0"]
changes:
  description: Each write the step made (or in check mode would make), in order.
  returned: always
  type: list
  elements: str
  sample: ["node h100-0: hold the upgrade (skip label)"]
failed_nodes:
  description: On an abort, node name to the reason it failed.
  returned: on failure of a wave
  type: dict
  sample: {h100-0: "the operator's upgrade controller set nvidia.com/gpu-driver-upgrade-state=upgrade-failed"}
operator:
  description: The operator names used and how they were found, as M(gpuops.gpu_operator.gpu_cluster_info) says.
  returned: always
  type: dict
api_requests:
  description: HTTP requests made to the API server.
  returned: always
  type: int
  sample: 42
"""

import time

from ansible.module_utils.urls import open_url

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.k8s import KUBERNETES, module_client
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.args import (
    KUBECONFIG_ARG_SPEC,
    OPERATOR_NAMES_ARG_SPEC,
    QUARANTINE_ARG_SPEC,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.errors import GpuOpsError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.module import run_module
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.run import canary_for
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.steps import run_step


def argspec():
    spec = dict(KUBECONFIG_ARG_SPEC, **QUARANTINE_ARG_SPEC, **OPERATOR_NAMES_ARG_SPEC)
    spec.update(
        step=dict(type="str", default="plan", choices=["plan", "prepare", "wave", "finish_wave", "rollback", "status"]),
        driver_version=dict(type="str"),
        chart_version=dict(type="str"),
        chart_values=dict(type="dict", default={}),
        canary_nodes=dict(type="list", elements="str", default=[]),
        canary_selector=dict(type="str", default=""),
        waves=dict(type="list", elements="raw", default=["100%"]),
        exclude=dict(type="list", elements="str", default=[]),
        foreign_quarantine=dict(type="str", default="skip", choices=["skip", "fail"]),
        taint_key=dict(type="str", default="gpuops.io/canary-upgrade", no_log=False),
        taint_effect=dict(type="str", default="NoSchedule", choices=["NoSchedule", "PreferNoSchedule", "NoExecute"]),
        record_name=dict(type="str", default="gpuops-canary-upgrade"),
        upgrade_policy=dict(type="dict", default={"autoUpgrade": True}),
        hold_operands=dict(type="bool", default=True),
        wave=dict(type="int"),
        eviction=dict(type="str", default="evict", choices=["evict", "wait", "none"]),
        max_evicted_workloads=dict(type="int"),
        wait_for_completion_selector=dict(type="str", default=""),
        cuda_images=dict(type="list", elements="dict", default=[]),
        eviction_timeout=dict(type="int", default=600),
        wave_timeout=dict(type="int", default=1800),
        stall_grace=dict(type="int", default=180),
        proof_timeout=dict(type="int", default=180),
        poll_interval=dict(type="float", default=2.0),
        progress_interval=dict(type="int", default=30),
        continue_wait=dict(type="bool", default=False),
        dcgm_url=dict(type="str"),
        passed=dict(type="bool", default=True),
        reason=dict(type="str", default=""),
        failed_nodes=dict(type="list", elements="str", default=[]),
    )
    return spec


def _fetch(url):
    return open_url(url, timeout=10).read().decode("utf-8", "replace")


def execute(module, client, clock=time.time, sleep=time.sleep):
    """Run ``step`` (see :func:`.steps.run_step`) in the operator namespace found; returns the result dict."""
    p = dict(module.params, _fetch=_fetch)
    canary, names = canary_for(client, p, check_mode=module.check_mode, clock=clock, sleep=sleep)
    result = {"changes": canary.changes, "operator": names.result()}
    result.update(run_step(canary, p, module.check_mode))
    result.update(changed=bool(canary.changes), api_requests=client.requests)
    return result


def execute_module(module):
    client = module_client(module)
    try:
        return execute(module, client)
    except GpuOpsError as exc:
        exc.details.setdefault("api_requests", client.requests)
        raise


def main():
    run_module(argspec(), execute_module, requirements=[KUBERNETES], supports_check_mode=True)


if __name__ == "__main__":
    main()
