#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: gpu_audit_report
short_description: Join GPU host facts with each cluster's view and write the fleet audit reports
description:
  - Joins every GPU host's M(gpuops.gpu_operator.gpu_host_facts) and M(gpuops.gpu_operator.nvidia_gpu_facts) results
    with the node that its cluster's M(gpuops.gpu_operator.gpu_cluster_info) reports, across any number of clusters.
  - Hosts whose fact tasks were unreachable or failed stay in the report with that status; GPU nodes that no
    inventory host names are reported as V(not_in_inventory).
  - Computes, per pool of each cluster, the drift of the driver, CUDA, kernel, OS, VBIOS, MIG layout, container toolkit
    and runtime config (values that differ between the pool's hosts, with the majority and the outliers); GPU health
    by category (ECC, remapped rows, Xid-related, thermal, other) for a heat map; mismatches between host and cluster
    (NVML GPU count against C(nvidia.com/gpu) allocatable, MIG mode against the node's C(all-*) MIG config label, host
    driver against the node's driver label, host without node); and, with O(baseline), what changed since an earlier
    snapshot.
  - For nodes whose GPUs reach pods through Dynamic Resource Allocation (the node's C(mode) from
    M(gpuops.gpu_operator.gpu_cluster_info) is V(dra) or V(both), or the node is meant to run the DRA driver), each
    row also holds a compact DRA view (devices published by type, the GPUs they stand for, allocated, free and tainted
    devices, the published driver versions, device taints, pool generation and completeness), each NVML GPU is marked
    published or not by UUID, and NVML against the published devices is compared as mismatches (GPU count, an NVML
    GPU with no device, a device whose UUID NVML does not know, the published driver version). The Markdown and HTML
    reports get a DRA section only when some node uses DRA. A node in DRA mode only is not compared with
    C(nvidia.com/gpu) allocatable.
  - Each row holds its node's judgement (C(judgement) - the first failing layer and the findings, each with its
    layer and code), the one M(gpuops.gpu_operator.gpu_validate_report) and M(gpuops.gpu_operator.gpu_triage_info)
    make of the node from the same facts.
  - Writes a JSON snapshot (schema C(docs/audit-snapshot.schema.json), RV(summary) and more), a Markdown summary and
    a self-contained HTML report into O(dest). The HTML (a Jinja2 template with autoescape; inline CSS, JavaScript
    and SVG, nothing fetched) has a severity legend, pictures of the driver and CUDA versions per pool and of each
    host's GPUs coloured by health, the per-pool heat map, drift, the findings and mismatches with their codes
    linked to the fix, and the fleet table (worst rows first, sortable, scrolling under sticky headers).
  - Every file is staged in the module's temporary directory and moved over its target with C(atomic_move), so a
    reader never sees a half-written report.
  - Runs on the controller (the play's host is usually C(localhost)); reads nothing from the cluster itself.
author:
  - gpuops.gpu_operator contributors (@gpuops)
requirements:
  - Jinja2 (the HTML report; installed with ansible-core)
extends_documentation_fragment:
  - gpuops.gpu_operator.attributes
  - gpuops.gpu_operator.attributes.CHECK_MODE_PLAN
  - gpuops.gpu_operator.attributes.DIFF
  - gpuops.gpu_operator.attributes.PLATFORM_CONTROLLER
  - gpuops.gpu_operator.attributes.ACTIONGROUP_GPU
options:
  dest:
    description:
      - Directory the reports are written to; created when missing (mode 0777 less the umask, as C(mkdir -p)).
    type: path
    required: true
  hosts:
    description:
      - GPU hosts keyed by inventory name. Each value has C(cluster) (a key of O(clusters)), C(node_name) (the
        Kubernetes node, default the inventory name), C(pool), and the registered results of the fact tasks,
        C(host_facts_result) and C(nvml_result) (omitted or V(null) when the task did not run).
    type: dict
    required: true
  clusters:
    description:
      - Clusters keyed by name. Each value has C(result), the registered M(gpuops.gpu_operator.gpu_cluster_info)
        result (a failed result marks the cluster V(error)), and optionally C(kubeconfig) and C(context) for the record.
    type: dict
    required: true
  baseline:
    description:
      - An earlier JSON snapshot to report changes against (rows added or removed, status, drift fields, GPU count,
        health, allocatable, new and resolved findings and mismatches). It may be the file this run replaces.
      - Its C(schema_version) must have the same major version as this module writes.
    type: path
  formats:
    description: Reports to write.
    type: list
    elements: str
    choices: [json, markdown, html]
    default: [json, markdown, html]
  basename:
    description: File name without extension; the reports are C(<basename>.json), C(.md) and C(.html).
    type: str
    default: gpu-audit
  title:
    description: Title of the Markdown and HTML reports.
    type: str
    default: GPU fleet audit
  thermal_warning_c:
    description: GPU temperature (Celsius) at or above which a GPU without a slowdown gets a thermal warning.
    type: int
    default: 85
notes:
  - A re-run over an unchanged fleet keeps the snapshot's C(generated_at) and rewrites nothing (C(changed=false)); this
    needs V(json) in O(formats).
  - In check mode it computes the reports and returns whether each file would change, writing nothing.
  - In diff mode the diff is the Markdown summary (or the first of O(formats)) before and after.
seealso:
  - module: gpuops.gpu_operator.gpu_cluster_info
  - module: gpuops.gpu_operator.nvidia_gpu_facts
  - module: gpuops.gpu_operator.gpu_host_facts
"""

EXAMPLES = r"""
# The report joins each GPU host's fact results with its node in the cluster's view. From the host that talks to the
# cluster, the facts of GPU host gpu-node-1 (kept on that host) and the view of its cluster, prod:
- name: Read the host facts of gpu-node-1
  gpuops.gpu_operator.gpu_host_facts:
  delegate_to: gpu-node-1
  delegate_facts: true
  register: host_facts

- name: Read the NVML facts of gpu-node-1
  gpuops.gpu_operator.nvidia_gpu_facts:
  delegate_to: gpu-node-1
  delegate_facts: true
  register: nvml_facts

- name: Read the GPU view of cluster prod, every node in full
  gpuops.gpu_operator.gpu_cluster_info:
    node_detail: all
  register: prod_cluster_info

- name: Write the audit reports for one cluster, with the changes since the last run's snapshot once there is one
  gpuops.gpu_operator.gpu_audit_report:
    dest: /var/lib/gpu-audit
    hosts:
      gpu-node-1:
        cluster: prod
        node_name: gpu-node-1
        pool: h100
        host_facts_result: "{{ host_facts }}"
        nvml_result: "{{ nvml_facts }}"
    clusters:
      prod:
        result: "{{ prod_cluster_info }}"
    baseline: "{{ '/var/lib/gpu-audit/gpu-audit.json' if '/var/lib/gpu-audit/gpu-audit.json' is file else omit }}"
  register: audit

# The whole audit through the role, as playbooks/audit.yml runs it - first, in a play on the GPU hosts, each host's
# facts (in parallel; an unreachable host is kept as such):
- name: Read each GPU host's facts for the audit
  ansible.builtin.import_role:
    name: gpuops.gpu_operator.gpu_audit
    tasks_from: host_facts

# then, in a play on the controller, the view of every cluster (an inventory group with its own kubeconfig) and the
# reports in gpu_audit_report_dir:
- name: Audit the fleet
  ansible.builtin.import_role:
    name: gpuops.gpu_operator.gpu_audit
"""

RETURN = r"""
files:
  description: Path of each report by format.
  returned: always
  type: dict
  sample: {json: /var/lib/gpu-audit/gpu-audit.json, markdown: /var/lib/gpu-audit/gpu-audit.md}
written:
  description: Reports written by this run (none in check mode, none when nothing changed).
  returned: always
  type: list
  elements: str
generated_at:
  description: The snapshot's timestamp (UTC); kept from the previous snapshot when nothing changed.
  returned: always
  type: str
  sample: "2026-12-03T15:00:00Z"
summary:
  description:
    - Fleet counts - C(clusters), C(clusters_failed), C(rows), C(hosts), C(statuses) (rows by V(ok), V(unreachable),
      V(failed), V(not_audited), V(not_in_inventory)), C(gpus), C(gpus_warning), C(gpus_critical), C(findings),
      C(mismatches), C(drift), C(dra_nodes) (rows whose node uses DRA).
  returned: always
  type: dict
  sample: {clusters: 2, hosts: 7, statuses: {ok: 6, unreachable: 1}, gpus: 41, gpus_critical: 3}
unreachable_hosts:
  description: Inventory hosts recorded as unreachable.
  returned: always
  type: list
  elements: str
degraded_gpus:
  description: Every GPU with a warning or critical health verdict, as C(<cluster>/<node> GPU <index>) followed by its
    reasons in parentheses.
  returned: always
  type: list
  elements: str
  sample: ["east/h100-1 GPU 5 (uncorrectable_ecc_volatile)"]
changes:
  description:
    - Changes against O(baseline) - C(added), C(removed) (row ids C(<cluster>/<node>)), C(status), C(fields),
      C(findings_new), C(findings_resolved), C(mismatches_new), C(mismatches_resolved), C(total); V(null) without a
      baseline.
  returned: always
  type: dict
"""

import datetime

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.html import JINJA2
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.module import run_module
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit.report import (
    AuditReport,
    ReportError,
    ReportOptions,
)


def argspec():
    return dict(
        dest=dict(type="path", required=True),
        hosts=dict(type="dict", required=True),
        clusters=dict(type="dict", required=True),
        baseline=dict(type="path"),
        formats=dict(
            type="list", elements="str", choices=["json", "markdown", "html"], default=["json", "markdown", "html"]
        ),
        basename=dict(type="str", default="gpu-audit"),
        title=dict(type="str", default="GPU fleet audit"),
        thermal_warning_c=dict(type="int", default=85),
    )


def _now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def execute_module(module):
    p = module.params
    if not p["formats"]:
        raise ReportError("formats is empty; choose one or more of json, markdown, html")
    bad = sorted(n for n, h in p["hosts"].items() if not isinstance(h, dict) or h.get("cluster") not in p["clusters"])
    if bad:
        raise ReportError(
            "hosts %s: each needs a dict whose cluster is a key of clusters (%s)"
            % (", ".join(bad), ", ".join(sorted(p["clusters"])) or "none given")
        )
    report = AuditReport(p["hosts"], p["clusters"], ReportOptions.from_params(p))
    try:
        result = report.run(_now(), module)
    except (ReportError, OSError) as exc:
        raise ReportError("audit report: %s" % exc) from exc
    diff = result.pop("diff")
    if module._diff and result["changed"]:
        result["diff"] = diff
    return result


def main():
    run_module(argspec(), execute_module, requirements=[JINJA2], supports_check_mode=True)


if __name__ == "__main__":
    main()
