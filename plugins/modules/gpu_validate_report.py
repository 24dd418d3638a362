#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: gpu_validate_report
short_description: Judge every GPU node layer by layer from the cluster's view and write the validation reports
description:
  - The verdict step of the P(gpuops.gpu_operator.gpu_validate#role) role, on the module side - reads the cluster's GPU
    view in the few paginated LISTs of M(gpuops.gpu_operator.gpu_cluster_info) (every node in full, which stays in the
    module), the operand sandbox failures (Events C(FailedCreatePodSandBox) of O(operator_namespace)) and, with
    O(monitoring) C(source=endpoints), the C(nvidia-dcgm-exporter) Service and its EndpointSlices. The operator
    namespace and the ClusterPolicy are discovered unless given (RV(operator)).
  - Joins each host of O(hosts) with its node and judges it in layer order as
    P(gpuops.gpu_operator.fleet_summary#filter) does (its C(rows), C(passed), C(failed), C(failed_by_layer), ...);
    with O(admission) plans the admission gate as P(gpuops.gpu_operator.admission_plan#filter) does.
  - Writes the JSON (schema C(docs/validate-report.schema.json)), Markdown and HTML reports into O(dest), each
    staged in the module's temporary directory and moved over its target with C(atomic_move), only when its text
    changes; the JSON keeps the previous report's C(generated_at) while its content is the same, so a re-run
    changes nothing.
  - Returns the console lines to print (P(gpuops.gpu_operator.fleet_console#filter)), so the cluster's view (several
    kilobytes a node) never travels through Ansible variables - at 1,000 nodes that round trip costs more than the
    LISTs themselves.
  - Read-only on the cluster. Needs RBAC C(list) on nodes, pods, events and EndpointSlices in O(operator_namespace),
    C(get) on its Services, C(list) on ClusterPolicies, NVIDIADrivers and the C(resource.k8s.io) objects (see
    C(docs/rbac.yml)).
author:
  - gpuops.gpu_operator contributors (@gpuops)
requirements:
  - Jinja2 (the HTML report; installed with ansible-core)
extends_documentation_fragment:
  - gpuops.gpu_operator.kubeconfig
  - gpuops.gpu_operator.quarantine
  - gpuops.gpu_operator.operator_names
  - gpuops.gpu_operator.attributes
  - gpuops.gpu_operator.attributes.CHECK_MODE_PLAN
  - gpuops.gpu_operator.attributes.DIFF
  - gpuops.gpu_operator.attributes.CLUSTER
options:
  hosts:
    description:
      - The GPU hosts to judge, keyed by inventory name, each with C(node_name), C(pool) and C(nvidia_gpu) (the
        host's M(gpuops.gpu_operator.nvidia_gpu_facts)) - what P(gpuops.gpu_operator.fleet_hosts#filter) returns.
    type: dict
    required: true
  label_selector:
    description: Label selector of the GPU nodes to read (server-side); default every GPU node.
    type: str
  page_size:
    description: Objects per LIST page.
    type: int
    default: 2000
  smoke:
    description:
      - The smoke results by node (M(gpuops.gpu_operator.gpu_smoke_test)'s C(nodes)); V(null) when no smoke pod ran
        (the smoke check is then not judged).
    type: dict
  monitoring:
    description:
      - How the monitoring layer is checked; V(null) - not checked.
      - C(source=endpoints) - the exporter Service and its EndpointSlices, read by the module.
      - C(source=prometheus) with C(series) (the result of C(count by (<node_label>) (DCGM_FI_DEV_GPU_UTIL))),
        C(xid) (the result of C(DCGM_FI_DEV_XID_ERRORS)) and C(node_label).
    type: dict
  mig_layouts:
    description: The MIG layout each node should carry, by node name (see the gpu_validate role).
    type: dict
    default: {}
  routes:
    description: Layer to owner, over the default routes (the summary's C(by_owner)).
    type: dict
    default: {}
  admission:
    description:
      - Plan the admission gate (see P(gpuops.gpu_operator.admission_plan#filter)); V(null) - no gate.
    type: dict
    suboptions:
      taint_key:
        description: The gate's taint.
        type: str
        default: gpuops.io/unvalidated
      annotation:
        description: The node annotation holding each node's admission record.
        type: str
        default: gpuops.io/admission
      known_taints:
        description: Taint keys that are not someone else's hold.
        type: list
        elements: str
        default: [nvidia.com/gpu]
  dest:
    description: Directory the reports are written to; created when missing (mode 0777 less the umask, as C(mkdir -p)).
    type: path
    required: true
  basename:
    description: File name of the reports without extension (C(.json), C(.md), C(.html)).
    type: str
    default: gpu-validate
  title:
    description: The reports' heading.
    type: str
    default: GPU validation report
  console_limit:
    description: Failing nodes the console lines show at most; the rest are counted (the reports list every node).
    type: int
    default: 20
seealso:
  - module: gpuops.gpu_operator.gpu_cluster_info
  - plugin: gpuops.gpu_operator.fleet_summary
    plugin_type: filter
"""

EXAMPLES = r"""
# The verdict reads each GPU host's NVML facts from hostvars: gather them first (a host without them fails at the
# driver layer). From the host that talks to the cluster, once per GPU host, keeping the facts on that host:
- name: Gather the NVML facts of every GPU host
  gpuops.gpu_operator.nvidia_gpu_facts:
  delegate_to: "{{ item }}"
  delegate_facts: true
  loop: "{{ groups['gpu_hosts'] }}"

- name: Judge every GPU node and write the reports
  gpuops.gpu_operator.gpu_validate_report:
    hosts: "{{ hostvars | gpuops.gpu_operator.fleet_hosts(groups['gpu_hosts']) }}"
    monitoring: {source: endpoints}
    dest: /srv/gpu-reports
  register: validation

- name: Print the summary
  ansible.builtin.debug:
    msg: "{{ validation.console }}"
"""

RETURN = r"""
summary:
  description:
    - The verdict of every host's node, as P(gpuops.gpu_operator.fleet_summary#filter) returns it (C(rows),
      C(passed), C(failed), C(quarantined), C(failed_by_layer), C(by_owner), C(lines), ...), with C(admission) (the
      plan's report) when O(admission) is set.
    - C(policy_status) says how to read the state of the ClusterPolicy (or, in GPUCluster mode, the GPUCluster -
      C(kind), C(name), C(state)) for the operator release that runs (C(release),
      C(status_covers_upgrades), the nodes C(upgrading), C(meaning) V(ready), V(not-ready), V(upgrading) or
      V(not-proven), and C(text)); the C(upgrade) check of each row compares the node's driver with the version the
      ClusterPolicy or its NVIDIADriver is set to.
  returned: always
  type: dict
admission:
  description:
    - The admission gate's plan (C(nodes), C(taint), C(untaint), C(annotate), C(counts), C(report), C(lines));
      V(null) without O(admission).
  returned: always
  type: dict
console:
  description: The console summary - totals, each failing node with its evidence, fix and command, the report files.
  returned: always
  type: list
  elements: str
files:
  description: The report files (written or not).
  returned: always
  type: list
  elements: str
written:
  description: The report files this run wrote (none in check mode).
  returned: always
  type: list
  elements: str
generated_at:
  description: The reports' timestamp (the previous one while the content is the same).
  returned: always
  type: str
operator:
  description: The operator's names this run used and how each was found, as M(gpuops.gpu_operator.gpu_cluster_info)
    returns them (C(mode), C(namespace), C(namespace_source), C(cluster_policy), C(gpu_cluster),
    C(nvidia_drivers), C(problems)).
  returned: always
  type: dict
api_requests:
  description: HTTP requests made to the API server.
  returned: always
  type: int
"""

import datetime

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.k8s import KUBERNETES, module_client
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.args import (
    KUBECONFIG_ARG_SPEC,
    OPERATOR_NAMES_ARG_SPEC,
    QUARANTINE_ARG_SPEC,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.html import JINJA2
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.module import run_module
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.admission import (
    DEFAULT_ANNOTATION,
    DEFAULT_TAINT_KEY,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.run import validate


def argspec():
    spec = dict(KUBECONFIG_ARG_SPEC, **QUARANTINE_ARG_SPEC)
    spec.update(OPERATOR_NAMES_ARG_SPEC)
    spec.update(
        hosts=dict(type="dict", required=True),
        label_selector=dict(type="str"),
        page_size=dict(type="int", default=2000),
        smoke=dict(type="dict"),
        monitoring=dict(type="dict"),
        mig_layouts=dict(type="dict", default={}),
        routes=dict(type="dict", default={}),
        admission=dict(
            type="dict",
            options=dict(
                taint_key=dict(type="str", default=DEFAULT_TAINT_KEY, no_log=False),
                annotation=dict(type="str", default=DEFAULT_ANNOTATION),
                known_taints=dict(type="list", elements="str", default=["nvidia.com/gpu"], no_log=False),
            ),
        ),
        dest=dict(type="path", required=True),
        basename=dict(type="str", default="gpu-validate"),
        title=dict(type="str", default="GPU validation report"),
        console_limit=dict(type="int", default=20),
    )
    return spec


def execute_module(module):
    client = module_client(module)
    now = datetime.datetime.now(datetime.timezone.utc)
    result = validate(client, module, module.params, now.strftime("%Y-%m-%dT%H:%M:%SZ"), now.strftime("%Y-%m-%d"))
    diff = result.pop("diff")
    if module._diff and result["changed"]:
        result["diff"] = diff
    result["api_requests"] = client.requests
    return result


def main():
    run_module(argspec(), execute_module, requirements=[KUBERNETES, JINJA2], supports_check_mode=True)


if __name__ == "__main__":
    main()
