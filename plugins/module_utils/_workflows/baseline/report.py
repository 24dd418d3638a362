# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change incompatibly at any
# time, including in a patch release. Do not use it elsewhere.

"""The baseline report: per-host and cluster results joined, drift per pool, counts, the verdict, Markdown."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.text import md_table
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline.drift import drift
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline.evaluate import (
    evaluate_cluster,
    evaluate_host,
    finding_line,
    summarise,
    verdict,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline.facts import (
    operator_managed,
    target_driver,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline.registry import options


def report(hosts, cluster, raw_options):
    """The whole baseline: per-host results (host checks plus the cluster findings naming the host), cluster
    results, drift per pool, counts and the overall verdict.

    ``hosts`` maps inventory names to ``{node_name, pool, gpu_host, nvidia_gpu, gpu_node_labels,
    gpu_node_taints, user_checks, baseline}`` where ``baseline`` is a host's own ``evaluate_host`` result when
    the host play already made it (else it is computed here).
    """
    opts = options(raw_options)
    per_host = {name: _host_row(name, hosts[name], opts) for name in sorted(hosts)}
    cl = evaluate_cluster(cluster or {}, hosts, opts) if cluster is not None else summarise([])
    # A cluster finding about a host (or its node) is that host's finding too.
    for r in cl["findings"]:
        subjects = set(r.get("subjects") or [])
        for name, row in per_host.items():
            if name in subjects or row["node"] in subjects:
                row["findings"] = row["findings"] + [r]
                row["verdict"] = verdict(row["findings"])
    counts = {"pass": 0, "warn": 0, "fail": 0}
    for row in per_host.values():
        counts[row["verdict"]] += 1
    overall = verdict([f for row in per_host.values() for f in row["findings"]] + cl["findings"])
    lines = ["%s: %s" % (name, finding_line(f)) for name, row in sorted(per_host.items()) for f in row["findings"]]
    lines += ["cluster: %s" % finding_line(f) for f in cl["findings"] if not f.get("subjects")]
    return {
        "operator_version": opts["operator_version"],
        "release": opts["release"]["release"],
        "data_version": opts["release"]["data_version"],
        "driver_policy": opts["driver_policy"],
        "target_driver": target_driver(opts) if operator_managed(opts) else None,
        "operator_mode": opts["operator_mode"],
        "dra_driver": opts["release"]["dra_driver"] if opts["operator_mode"] == "gpucluster" else None,
        "hosts": per_host,
        "cluster": cl,
        "drift": drift(hosts),
        "counts": counts,
        "verdict": overall,
        "lines": lines or ["all %d GPU host(s) pass the baseline" % len(per_host)],
    }


def report_hosts(hostvars, names, node_name_var, pool_var, gpu_node_labels, gpu_node_taints):
    """The ``hosts`` of :func:`report` from Ansible ``hostvars`` for the inventory hosts ``names``: node name and
    pool from the variables named, the gathered facts, the labels and taints the GPU nodes carry (the host's own
    ``gpu_baseline_gpu_node_labels`` / ``gpu_baseline_gpu_node_taints``, else the ones given) and the host's own
    result (``gpu_baseline_host_result``)."""
    out = {}
    for name in names:
        hv = hostvars[name]
        facts = hv.get("ansible_facts") or {}
        out[name] = {
            "node_name": hv.get(node_name_var, name),
            "pool": hv.get(pool_var),
            "gpu_host": facts.get("gpu_host", {}),
            "nvidia_gpu": facts.get("nvidia_gpu", {}),
            "gpu_node_labels": hv.get("gpu_baseline_gpu_node_labels", gpu_node_labels),
            "gpu_node_taints": hv.get("gpu_baseline_gpu_node_taints", gpu_node_taints),
            "baseline": hv.get("gpu_baseline_host_result"),
        }
    return out


def _host_row(name, h, opts):
    """One host's row before the cluster findings: its own baseline, or one computed from its facts."""
    if h.get("baseline"):
        own = h["baseline"]
    elif h.get("gpu_host"):
        own = evaluate_host(h, opts)
    else:  # no facts: hosts.gathered reports it; evaluating empty facts would only add noise
        own = summarise([])
    return {
        "node": h.get("node_name") or name,
        "pool": h.get("pool"),
        "verdict": own["verdict"],
        "results": own["results"],
        "findings": own["findings"],
    }


def should_fail(rep, fail_on):
    """True when the report has a finding at or above ``fail_on`` (``fail``, ``warn`` or ``never``)."""
    if fail_on == "never":
        return False
    if fail_on == "warn":
        return rep["verdict"] in ("fail", "warn")
    return rep["verdict"] == "fail"


def markdown(rep):
    """The report as Markdown: verdict, one line per failing host with its fixes, cluster checks, drift."""
    out = [
        "# GPU baseline: %s" % rep["verdict"].upper(),
        "",
        "Operator %s (matrix release %s, data %s), driver policy %s%s%s."
        % (
            rep["operator_version"],
            rep["release"],
            rep["data_version"],
            rep["driver_policy"],
            ", target driver %s" % rep["target_driver"] if rep["target_driver"] else "",
            ", GPUCluster mode with DRA driver %s" % rep["dra_driver"] if rep.get("dra_driver") else "",
        ),
        "",
        "Hosts: %(pass)d pass, %(warn)d warn, %(fail)d fail." % rep["counts"],
        "",
        "## Hosts",
        "",
    ]
    out += md_table(
        ("host", "node", "pool", "verdict", "findings"),
        [
            (
                name,
                row["node"],
                row["pool"] or "-",
                row["verdict"],
                ", ".join("%s (%s)" % (f["id"], f["severity"]) for f in row["findings"]) or "-",
            )
            for name, row in sorted(rep["hosts"].items())
        ],
    )
    out += _findings(rep["hosts"])
    out += ["", "## Cluster checks", ""]
    out += md_table(
        ("check", "severity", "status", "evidence"),
        [(r["id"], r["severity"], r["status"], r["evidence"] or "") for r in rep["cluster"]["results"]],
    )
    for r in rep["cluster"]["findings"]:
        out += ["", "- **%s** fix: %s" % (r["id"], r["fix"])]
    out += ["", "## Drift per pool", ""] + _drift_lines(rep["drift"])
    return "\n".join(out) + "\n"


def _findings(hosts):
    """The ``Findings and fixes`` section: per failing host, each finding with its fix (no lines when none)."""
    failing = [(n, r) for n, r in sorted(hosts.items()) if r["findings"]]
    if not failing:
        return []
    out = ["", "## Findings and fixes", ""]
    for name, row in failing:
        out += ["### %s (%s)" % (name, row["verdict"]), ""]
        for f in row["findings"]:
            out.append("- **%s** [%s]: %s  " % (f["id"], f["severity"], f["evidence"]))
            out.append("  Fix: %s" % f["fix"])
        out.append("")
    return out[:-1]


def _drift_lines(found):
    """One line per pool and dimension that drifts: each value with its hosts."""
    if not found:
        return ["No drift."]
    return [
        "- pool %s, %s: %s"
        % (
            d["pool"],
            d["dimension"],
            "; ".join("%s on %s" % (v, ", ".join(hs)) for v, hs in sorted(d["values"].items())),
        )
        for d in found
    ]
