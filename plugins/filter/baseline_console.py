# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: baseline_console
short_description: The console summary of a GPU baseline - the verdict, then each finding once with its hosts
version_added: 0.1.0
author: gpuops.gpu_operator contributors (@gpuops)
description:
  - Renders the result of P(gpuops.gpu_operator.baseline_report#filter) for the console, as lines - the verdict with
    the hosts per verdict, then every distinct finding once (most severe first), naming the hosts it was found on
    (C(all 6 GPU hosts) when it is every one) or C(the cluster), with its evidence and fix; then the report files.
  - Findings are the same when their check, severity, evidence and fix are; a cluster finding about several hosts
    (for example the container runtime version of every node) is one line, not one per host.
options:
  _input:
    description: The result of P(gpuops.gpu_operator.baseline_report#filter).
    type: dict
    required: true
  reports:
    description: Report files to name in the last line.
    type: list
    elements: str
  host_limit:
    description: Hosts named per finding at most; the rest are counted.
    type: int
    default: 8
seealso:
  - plugin: gpuops.gpu_operator.baseline_report
    plugin_type: filter
"""

EXAMPLES = r"""
- name: Print the baseline once
  ansible.builtin.debug:
    msg: "{{ gpu_baseline_report | gpuops.gpu_operator.baseline_console(reports=['/srv/reports/baseline.md']) }}"
"""

RETURN = r"""
_value:
  description: The lines.
  type: list
  elements: str
"""

SEVERITY_ORDER = ("fail", "warn", "info")


def _key(f):
    return (f.get("id"), f.get("severity"), f.get("evidence"), f.get("fix"))


def _where(hosts, all_hosts, limit):
    if not hosts:
        return "the cluster"
    if len(all_hosts) > 1 and set(hosts) == set(all_hosts):
        return "all %d GPU hosts" % len(all_hosts)
    shown = ", ".join(hosts[:limit])
    return shown + (" and %d more" % (len(hosts) - limit) if len(hosts) > limit else "")


def grouped_findings(report):
    """Every distinct finding once: ``(finding, hosts)`` with the hosts (sorted) it was found on, cluster-only
    findings with no hosts; most severe first, then by check id."""
    groups = {}
    for name, row in sorted((report.get("hosts") or {}).items()):
        for f in row.get("findings") or []:
            groups.setdefault(_key(f), (f, []))[1].append(name)
    for f in (report.get("cluster") or {}).get("findings") or []:
        groups.setdefault(_key(f), (f, []))
    order = {s: i for i, s in enumerate(SEVERITY_ORDER)}
    return sorted(
        groups.values(),
        key=lambda g: (order.get(g[0].get("severity"), len(order)), str(g[0].get("id")), str(g[0].get("evidence"))),
    )


def baseline_console(report, reports=None, host_limit=8):
    counts = report.get("counts") or {}
    hosts = sorted(report.get("hosts") or {})
    lines = [
        "GPU baseline %s: %d pass, %d warn, %d fail of %d GPU host(s); operator %s, driver policy %s"
        % (
            report.get("verdict"),
            counts.get("pass", 0),
            counts.get("warn", 0),
            counts.get("fail", 0),
            len(hosts),
            report.get("operator_version"),
            report.get("driver_policy"),
        )
    ]
    for f, on in grouped_findings(report):
        lines.append(
            "%s %s on %s: %s -- fix: %s"
            % (f.get("severity"), f.get("id"), _where(on, hosts, int(host_limit)), f.get("evidence"), f.get("fix"))
        )
    if reports:
        lines.append("reports: %s" % ", ".join(reports))
    return lines


class FilterModule(object):
    def filters(self):
        return {"baseline_console": baseline_console}
