#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: gpu_operator
short_description: Install, upgrade or remove the NVIDIA GPU Operator Helm release, CRDs first
description:
  - Drives the C(helm) CLI (v3 or v4) to install or upgrade the GPU Operator chart from a chart repository URL,
    an C(oci://) reference or a local path, or to uninstall it.
  - Before every install or upgrade it applies the target chart's CRDs by server-side apply (field manager
    C(gpuops-gpu-operator)), because Helm never upgrades CRDs and the API server silently prunes fields an old
    CRD does not know. It never uninstalls to reinstall.
  - Only the CRDs of the chart and of the subcharts the effective values enable are applied (a subchart's
    C(condition) and C(tags), as Helm decides them); for example with C(nfd.enabled=false) the NFD subchart's CRDs,
    which then belong to the cluster's own NFD, are left alone and listed in C(crds_skipped) of RV(plan).
  - Refuses an upgrade the GPU Operator life-cycle policy does not support (one that skips a major release
    C(YY.MM)) and any downgrade, unless O(force=true).
  - Refuses to apply CRDs that would drop fields from the CRDs in the cluster (those of a newer chart), naming how
    many fields per CRD, unless O(force=true). Check mode refuses the same way.
  - Renders the chart (C(helm template)) before writing anything, so a chart C(fail) check, a values schema
    violation or a template error fails the run with Helm's message and nothing changed, in check mode too. The
    render gets what the cluster serves (C(--api-versions) for every group, version and kind from API discovery,
    C(--kube-version) with the server's version), so a chart reading C(.Capabilities) renders as it installs.
  - Idempotent. Nothing is written when the deployed chart version and its values (C(helm get values)) equal the
    target version and the effective values, and the CRDs match the chart's.
  - The effective values are the user's O(values_files) and O(values) (they always win) on top of values
    synthesised from O(fleet) (see the C(gpuops.gpu_operator.operator_values) filter) and, with O(detect=true),
    from the cluster (C(nfd.enabled=false) when nodes already carry NFD labels; C(dcgmExporter.serviceMonitor.enabled)
    only when the ServiceMonitor CRD exists). They are passed to helm as one values file with C(--reset-values).
  - After a write it waits up to O(ready_timeout) seconds for ClusterPolicy C(status.state=ready) (the GPUCluster's in
    V(gpucluster) mode, and every NVIDIADriver when the CRD mode is on), counting a status only once the operator has
    observed the current spec (C(status.observedGeneration) or the C(Ready) condition's C(observedGeneration) equals
    C(metadata.generation); where the CRD carries neither, once the driver pods run the ClusterPolicy's driver
    version). When not ready it fails with what is still old, the conditions and the not-ready operands per node.
    A run that finds the release at the target checks readiness the same way, so it fails again until the operator
    is ready.
  - When C(helm uninstall) fails part way it reports C(changed=true) if helm deleted anything and lists the objects
    of the release (and of its hooks) that remain.
  - When the helm write fails it reads the release history. If Helm wrote no revision, nothing is rolled back and
    the message says the release is unchanged. If Helm wrote a revision, it rolls back (O(rollback_on_failure)) to
    the revision that was deployed before this run, never an older one, and the message names the revisions and
    chart versions.
author:
  - gpuops.gpu_operator contributors (@gpuops)
extends_documentation_fragment:
  - gpuops.gpu_operator.kubeconfig
  - gpuops.gpu_operator.helm
  - gpuops.gpu_operator.attributes
  - gpuops.gpu_operator.attributes.CHECK_MODE_PLAN
  - gpuops.gpu_operator.attributes.DIFF
  - gpuops.gpu_operator.attributes.CLUSTER
notes:
  - In check mode it returns the plan (chart version change, values diff, CRD changes) and writes nothing to the
    cluster.
  - In diff mode it returns the values and the rendered manifests before and after.
  - With helm v4 (server-side apply) an upgrade after another client changed a field the chart renders (for example
    a canary that patched C(spec.driver.version) of the ClusterPolicy) is a field-manager conflict.
    O(force_conflicts=true), the default, passes C(--force-conflicts) so the chart's values win, as helm v3's
    three-way merge does. Set it to V(false) to fail on such conflicts instead.
  - The namespace is not created unless O(create_namespace=true); the C(gpuops.gpu_operator.gpu_operator_install)
    role creates it with the PodSecurity C(privileged) labels the operands need.
  - Needs the RBAC rules in the collection's C(docs/rbac.yml) (Helm release Secrets, CRDs, the chart's objects).
seealso:
  - module: gpuops.gpu_operator.gpu_cluster_info
  - name: GPU Operator upgrade guide
    description: NVIDIA's page on upgrading the operator (CRDs first).
    link: https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/upgrade.html
options:
  state:
    description: V(present) installs or upgrades the release; V(absent) uninstalls it.
    type: str
    choices: [present, absent]
    default: present
  force:
    description:
      - Allow a downgrade or an upgrade that skips a major release, which the life-cycle policy does not support.
      - Allow applying CRDs that drop fields from the CRDs in the cluster (a warning counts them).
    type: bool
    default: false
  remove_crds:
    description:
      - With O(state=absent), also delete the CRDs of the chart and of the subcharts the release's values enable
        (and with them every ClusterPolicy and NVIDIADriver). Without O(chart_ref), the GPU Operator's own CRDs.
      - A CRD another owner manages is never deleted (another Helm release's annotations, an
        C(app.kubernetes.io/managed-by) label other than C(Helm), or C(spec) fields held by a field manager other
        than this module's and Helm's); those are listed in RV(crds_left) and in a warning.
      - By default CRDs stay, as Helm leaves them.
    type: bool
    default: false
  rollback_on_failure:
    description:
      - When an install or upgrade fails after Helm wrote a new revision, roll the release back to the revision
        that was deployed before this run. With V(false) the release stays at the failed revision.
      - A failure before Helm writes a revision changes nothing and is never rolled back.
    type: bool
    default: true
  ready_timeout:
    description:
      - Seconds to wait for the ClusterPolicy (the GPUCluster in V(gpucluster) mode) to be ready, after an install or
        upgrade and on a run that finds the release at the target; V(0) skips the wait.
    type: int
    default: 600
  mode:
    description:
      - How the operator manages GPUs. V(clusterpolicy), the chart's default, a ClusterPolicy for every operand;
        V(nvidiadriver), the same with the driver managed through NVIDIADriver objects
        (C(driver.nvidiaDriverCRD.enabled)); V(gpucluster), the GPUCluster CR (GPU Operator v26.7.0 or later) that
        deploys the DRA driver for NVIDIA GPUs, so GPUs reach pods through ResourceClaims of the DeviceClass
        C(gpu.nvidia.com) and nodes advertise no C(nvidia.com/gpu).
      - The values that select the mode (C(clusterPolicy.deployCR), C(gpuCluster.deployCR),
        C(driver.nvidiaDriverCRD.enabled)) are synthesised; O(values) that select another mode fail the run.
        V(gpucluster) also sets C(driver.nvidiaDriverCRD.enabled=true) while C(driver.enabled) is true (the chart
        refuses a GPUCluster without NVIDIADriver objects), and refuses, naming the value to set, C(values) the chart
        refuses in that mode (C(clusterPolicy.deployCR=true), C(driver.nvidiaDriverCRD.enabled=false) with the
        driver on) and a cluster that serves no C(resource.k8s.io) DeviceClass.
      - V(gpucluster) is for new installs. It is refused before any write on a cluster with a ClusterPolicy, on a
        release installed in another mode (and an installed V(gpucluster) release is not moved to another mode),
        on Kubernetes older than 1.34.2, on a chart without GPUCluster mode, and when O(fleet) names hosts whose
        driver is older than 580 (hosts without a known driver version are warned about).
      - Unset, the release keeps the mode its values select (the chart's default for a new install).
    type: str
    choices: [clusterpolicy, nvidiadriver, gpucluster]
"""

EXAMPLES = r"""
# fleet: the GPU hosts' facts decide driver.enabled (false where the hosts run their own driver), so a re-run over
# a cluster that site.yml installed keeps what it has; the driver version applies where the operator's driver runs.
- name: Install or upgrade the GPU Operator from NVIDIA's repository
  gpuops.gpu_operator.gpu_operator:
    chart_repo_url: https://helm.ngc.nvidia.com/nvidia
    chart_ref: gpu-operator
    chart_version: v26.7.0
    release_namespace: gpu-operator
    fleet: "{{ hostvars | gpuops.gpu_operator.operator_values(groups['gpu_hosts']) }}"
    values:
      driver:
        version: 595.91.07

- name: Plan only (check mode) and show the values diff
  gpuops.gpu_operator.gpu_operator:
    chart_repo_url: https://helm.ngc.nvidia.com/nvidia
    chart_ref: gpu-operator
    chart_version: v26.7.0
  check_mode: true
  diff: true
  register: gpu_operator_plan

- name: Values synthesised from host facts and inventory, user values on top
  gpuops.gpu_operator.gpu_operator:
    chart_ref: oci://registry.example.com/charts/gpu-operator
    chart_version: v26.7.0
    fleet: "{{ hostvars | gpuops.gpu_operator.operator_values(groups['gpu_hosts']) }}"
    values_files:
      - files/gpu-operator-site.yml

# GPUCluster mode is for new installs only - where a ClusterPolicy exists (a release in ClusterPolicy mode) it is
# refused before any write, saying what to do instead.
- name: A new install in GPUCluster mode (GPUs through DRA; hosts with drivers of R580 or later)
  gpuops.gpu_operator.gpu_operator:
    chart_repo_url: https://helm.ngc.nvidia.com/nvidia
    chart_ref: gpu-operator
    chart_version: v26.7.1
    mode: gpucluster
    fleet: "{{ hostvars | gpuops.gpu_operator.operator_values(groups['gpu_hosts']) }}"

- name: Remove the release, keep the CRDs
  gpuops.gpu_operator.gpu_operator:
    state: absent
"""

RETURN = r"""
plan:
  description:
    - What the run does (or, in check mode, would do). C(action) is V(install), V(upgrade), V(update) (same
      version, other values), V(crds) (only CRDs change), V(uninstall) or V(none).
    - C(from_version), C(to_version), C(app_version), C(release_status), C(values_changed) (dotted value paths),
      C(crd_changes) (per CRD C(name), C(action) V(create)/V(update)/V(none), C(fields_added), C(fields_removed)),
      C(crds_skipped) (CRDs of subcharts the values disable, neither applied nor removed, each with C(name),
      C(chart) and C(reason)), C(values_reasons) (why each synthesised value was chosen), C(mode) (the mode the
      effective values select, see O(mode)).
  returned: always
  type: dict
  sample:
    action: upgrade
    from_version: v25.10.1
    to_version: v26.3.3
    values_changed: [driver.version]
    crd_changes: [{name: clusterpolicies.nvidia.com, action: update, fields_added: [v1:spec.sandboxWorkloads.mode]}]
values:
  description: The effective values passed to helm (user values on top of the synthesised ones).
  returned: when O(state=present)
  type: dict
  sample: {driver: {enabled: true}, nfd: {enabled: false}, dcgmExporter: {serviceMonitor: {enabled: false}}}
release:
  description: The release after the run (C(helm get metadata)); null when there is none.
  returned: always
  type: dict
  sample: {name: gpu-operator, namespace: gpu-operator, chart_version: v26.3.3, revision: 2, status: deployed}
crds_applied:
  description: CRDs applied by server-side apply before the helm write.
  returned: when the release was installed or upgraded
  type: list
  elements: str
crds_removed:
  description: CRDs deleted (with O(remove_crds=true)); in check mode the ones that would be.
  returned: when O(state=absent)
  type: list
  elements: str
crds_left:
  description:
    - With O(remove_crds=true), the live CRDs left alone, each with C(name) and C(reason) (another owner manages
      it, or its subchart is disabled).
  returned: when O(state=absent)
  type: list
  elements: dict
  sample:
    - name: nodefeaturerules.nfd.k8s-sigs.io
      reason: subchart node-feature-discovery disabled by nfd.enabled=false
readiness:
  description:
    - After a write with O(ready_timeout) > 0. C(kind) (V(ClusterPolicy), or V(GPUCluster) in V(gpucluster) mode),
      C(ready), C(state), C(conditions), C(generation) and C(observed_generation) of that object, C(stale) (what the
      operator has not caught up with yet, the nodes still mid-upgrade included), C(nvidia_drivers) states,
      C(not_ready_operands) (node -> components), C(unscheduled_operands), C(waited_s).
    - C(release) (the operator release that runs, from the object's chart labels or the operator pod's image; null
      when unknown), C(upgrading) (the nodes mid-upgrade, not held by the skip label) and C(status_meaning)
      (V(ready), V(not-ready), V(upgrading) - 26.7.0+ keeps the object notReady while nodes upgrade - or
      V(not-proven) - an older or unknown release, whose ready state proves nothing during an upgrade). The wait is
      not ready while a node is mid-upgrade, on any release.
  returned: when O(state=present), not in check mode, and O(ready_timeout) > 0
  type: dict
  sample: {ready: true, state: ready, generation: 4, observed_generation: 4, stale: [], conditions: [],
           release: 26.7.0, upgrading: [], status_meaning: ready, not_ready_operands: {}, waited_s: 12.5}
helm_version:
  description: The helm binary's version.
  returned: always
  type: str
  sample: v4.0.1
helm_error:
  description: Helm's message when rendering the chart, the install or upgrade, or the uninstall failed.
  returned: on failure of the render, of the helm write or of the uninstall
  type: str
remaining:
  description: The objects of the release and of its hooks still in the cluster, as C(Kind namespace/name).
  returned: on failure of the uninstall
  type: list
  elements: str
  sample: [ServiceAccount gpu-operator/gpu-operator-node-feature-discovery-prune]
revision_written:
  description: Whether Helm wrote a new release revision before it failed.
  returned: on failure of the render or of the helm write
  type: bool
failed_revision:
  description: The revision Helm wrote and marked failed.
  returned: on failure of the helm write after Helm wrote a revision
  type: int
rollback_revision:
  description: The revision rolled back to (the one deployed before this run).
  returned: when a rollback was attempted
  type: int
rollback_error:
  description: The rollback failure, null when the rollback succeeded.
  returned: when a rollback was attempted
  type: str
rolled_back:
  description: Whether the release was rolled back after a failed helm write.
  returned: on failure of the render or of the helm write
  type: bool
"""


from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.helm import HELM_ARG_SPEC, Helm
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.k8s import (
    KUBERNETES,
    module_client,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.args import KUBECONFIG_ARG_SPEC
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.errors import GpuOpsError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.module import run_module
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.release import (
    OperatorRelease,
    ReleaseParams,
    helm_kubeconfig,
)


def argspec():
    spec = dict(KUBECONFIG_ARG_SPEC)
    spec.update(HELM_ARG_SPEC)
    spec.update(
        state={"type": "str", "choices": ["present", "absent"], "default": "present"},
        force={"type": "bool", "default": False},
        rollback_on_failure={"type": "bool", "default": True},
        remove_crds={"type": "bool", "default": False},
        ready_timeout={"type": "int", "default": 600},
        mode={"type": "str", "choices": ["clusterpolicy", "nvidiadriver", "gpucluster"]},
    )
    return spec


def helm_client(module):
    p = module.params
    helm = Helm(
        module,
        binary=p["helm_binary"],
        context=p["context"],
        username=p["chart_repo_username"],
        password=p["chart_repo_password"],
    )
    helm.kubeconfig = helm_kubeconfig(p["kubeconfig"], helm.tmpdir)
    if p["host"]:
        helm.env["HELM_KUBEAPISERVER"] = p["host"]
    if p["api_key"]:
        helm.env["HELM_KUBETOKEN"] = p["api_key"]
    if p["validate_certs"] is False:
        helm.env["HELM_KUBEINSECURE_SKIP_TLS_VERIFY"] = "true"
    return helm


def execute_module(module):
    kube = module_client(module)  # validates kubeconfig and context with a clear message first
    with helm_client(module) as helm:
        version = "v%d.%d.%d" % helm.version()
        # Reach the API server as this identity before helm does: a refused connection or a missing permission
        # then fails with the collection's message (server, status, the rule to grant), not as helm's stderr.
        kube.get("/api/v1/nodes", query={"limit": 1}, what="list nodes")
        release = OperatorRelease(ReleaseParams.from_module(module), helm, kube)
        try:
            result = release.run()
        except GpuOpsError as exc:
            exc.details.setdefault("helm_version", version)
            raise
        finally:
            for warning in release.warnings:
                module.warn(warning)
        result["helm_version"] = version
        return result


def main():
    run_module(
        argspec(),
        execute_module,
        requirements=[KUBERNETES],
        supports_check_mode=True,
        required_if=[("state", "present", ["chart_ref"])],
    )


if __name__ == "__main__":
    main()
