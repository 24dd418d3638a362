# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The fleet validation on the module side (gpu_validate_report): read the cluster once, judge every host's node,
plan the admission gate, write the reports and say what to print. The cluster's view (several kilobytes a node)
never travels through Ansible variables; only the verdicts come back."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.errors import ArgumentError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.files import read_text, write_stale
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import labels_of, name_of
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.upgrade_status import (
    expected_driver,
    nodes_in_flight,
    policy_status,
    running_release,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.cluster_read import read_lists, view_of
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.admission import (
    GateOptions,
    gate_plan,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.console import (
    fleet_console,
    operator_lines,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.fleet import (
    FleetInputs,
    fleet_summary,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.html_page import render_html
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.report import (
    summary_lines,
    summary_markdown,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.report_json import (
    render_json,
    report_document,
)

EXPORTER = "nvidia-dcgm-exporter"


def read_monitoring(client, namespace, monitoring):
    """``monitoring`` as fleet_summary takes it - with C(source: endpoints) the exporter Service and its
    EndpointSlices in ``namespace`` are read here."""
    if not monitoring or monitoring.get("source") != "endpoints":
        return monitoring
    service = client.get_or_none("/api/v1/namespaces/%s/services/%s" % (namespace, EXPORTER), what="get Service")
    slices, _meta = client.list_all(
        "/apis/discovery.k8s.io/v1/namespaces/%s/endpointslices" % namespace,
        label_selector="kubernetes.io/service-name=%s" % EXPORTER,
        what="list EndpointSlices",
    )
    return {"source": "endpoints", "service": service is not None, "endpoint_slices": slices}


def operator_status(lists, view):
    """``(driver_targets, status)``: the driver version the operator is set to per node, and how to read the
    ClusterPolicy's (or GPUCluster's) state while nodes upgrade (``upgrade_status.policy_status`` for the release that
    runs)."""
    policy = view["cluster_policy"]
    targets = {name_of(n): expected_driver(labels_of(n), policy, view["nvidia_drivers"]) for n in lists["nodes"] or []}
    in_flight = nodes_in_flight(lists["nodes"])
    release = running_release(lists["names"].policy, lists["pods"] or [])[0]
    return targets, policy_status(policy or view["gpu_cluster"], release, in_flight)


def report_files(summary, dest, basename, title, generated_at):
    """``({path: text}, generated_at)``: the JSON, Markdown and HTML reports; the JSON keeps the previous report's
    timestamp while its content is the same, and the other two print that timestamp."""
    base = os.path.join(dest, basename)
    document = report_document(summary, generated_at, read_text(base + ".json"))
    generated = document["generated_at"]
    return {
        base + ".json": render_json(document),
        base + ".md": summary_markdown(summary, title=title, generated=generated),
        base + ".html": render_html(summary, title=title, generated=generated),
    }, generated


def predicted_smoke(smoke, check_mode, previous_json):
    """The smoke results to judge: ``smoke`` as given, except in check mode, where no smoke pod runs (the role
    passes none): there the previous report's smoke verdict of each node predicts what a real run would find, so
    that check mode reports a change only where a real run would make one."""
    if smoke is not None or not check_mode or not previous_json:
        return smoke
    try:
        rows = json.loads(previous_json)["report"]["rows"]
    except (ValueError, KeyError, TypeError):
        return None
    found = {row["node"]: row["smoke"] for row in rows if isinstance(row, dict) and row.get("smoke")}
    return found or None


def validate(client, module, p, now, today):
    """Everything the role needs after the smoke pods: ``{summary, admission, operator, console, files,
    generated_at, changed, diff}``. ``p`` holds the module's parameters; ``now`` the report timestamp, ``today`` the
    admission record's date."""
    if os.path.exists(p["dest"]) and not os.path.isdir(p["dest"]):
        raise ArgumentError("dest %s exists and is not a directory; choose a report directory" % p["dest"])
    lists = read_lists(
        client, p["label_selector"], p["operator_namespace"], p["page_size"], cluster_policy=p["cluster_policy"]
    )
    view = view_of(lists, p["label_selector"], "all", p["quarantine_markers"])
    namespace = view["operator"]["namespace"]
    monitoring = read_monitoring(client, namespace, p["monitoring"])
    nri = bool(((view["cluster_policy"] or {}).get("cdi") or {}).get("nri_plugin"))
    targets, status = operator_status(lists, view)
    previous = read_text(os.path.join(p["dest"], p["basename"] + ".json"))
    inputs = FleetInputs(
        smoke=predicted_smoke(p["smoke"], module.check_mode, previous),
        monitoring=monitoring,
        mig_layouts=p["mig_layouts"],
        sandbox_events=lists["sandbox_events"],  # the operand sandbox failures: evidence for the toolkit layer
        dra=view["dra"],
        routes=p["routes"],
        operator_namespace=namespace,
        nri_plugin=nri,
        driver_targets=targets,
    )
    summary = fleet_summary(p["hosts"], view["nodes"], inputs)
    summary["policy_status"] = status
    summary["lines"] = summary_lines(summary)
    admission = None
    if p["admission"] is not None:
        gate = p["admission"]
        options = GateOptions(gate["taint_key"], gate["annotation"], today, gate["known_taints"])
        admission = gate_plan(summary, view["nodes"], lists["nodes"], view["cluster_policy"], options)
        summary["admission"] = admission["report"]
    files, generated = report_files(summary, p["dest"], p["basename"], p["title"], now)
    current, stale = write_stale(module, p["dest"], files)
    markdown = sorted(path for path in files if path.endswith(".md"))[0]
    console = fleet_console(
        summary,
        view["nodes"],
        namespace,
        ["none written in check mode"] if module.check_mode else list(files),
        p["console_limit"],
    )
    console[1:1] = operator_lines(view["operator"])  # after the head line
    return {
        "summary": summary,
        "admission": admission,
        "operator": view["operator"],
        "console": console,
        "files": list(files),
        "written": [] if module.check_mode else sorted(stale),
        "generated_at": generated,
        "changed": bool(stale),
        "diff": {
            "before": current[markdown] or "",
            "after": files[markdown],
            "before_header": markdown,
            "after_header": markdown,
        },
    }
