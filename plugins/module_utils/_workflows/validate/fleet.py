# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""GPU node validation: join each GPU host's own facts with the cluster's view of its node, run the checks in
order, and name the lowest broken layer.

The checks run in the order of the issue (host NVML, node, labels, allocatable against NVML, operand pods, MIG,
smoke pod, monitoring); every failing check becomes a *finding* with a layer, evidence and a fix. A node's verdict
is ``fail`` when it has any finding, and its ``failing_layer`` is the lowest layer of the stack that failed
(:data:`LAYERS`, in dependency order): a crashed driver also leaves no allocatable GPU and a Pending smoke pod, but
the verdict names the driver.

Pure functions over plain dicts (facts, ``gpu_cluster_info`` nodes, ``gpu_smoke_test`` results, Prometheus and
EndpointSlice JSON): tested without a cluster, used by the ``fleet_summary`` filter and the ``gpu_validate`` role.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

#: Layers in dependency order; a node's failing layer is the first of these with a finding.
LAYERS = (
    "driver",
    "node",
    "toolkit",
    "device-plugin",
    "gpu-health",
    "mig",
    "scheduling",
    "workload",
    "monitoring",
)

#: The checks, in the order they run, and what each looks at.
CHECKS = (
    ("host", "NVML on the host sees the GPUs"),
    ("node", "the host's Kubernetes node exists and is Ready"),
    ("labels", "GPU labels present (gpu.present, product, count)"),
    ("allocatable", "allocatable nvidia.com/gpu equals the NVML GPU count"),
    ("operands", "GPU Operator operand pods ready"),
    ("mig", "MIG config applied and advertised as requested"),
    ("smoke", "a GPU smoke-test pod passed"),
    ("monitoring", "DCGM metrics (Prometheus) or exporter endpoints present"),
)

#: Operand component -> layer it belongs to (others, e.g. the validator, are resolved from their evidence).
COMPONENT_LAYERS = {
    "driver": "driver",
    "container-toolkit": "toolkit",
    "device-plugin": "device-plugin",
    "device-plugin-mps": "device-plugin",
    "gpu-feature-discovery": "device-plugin",
    "mig-manager": "mig",
    "dcgm": "monitoring",
    "dcgm-exporter": "monitoring",
    "node-status-exporter": "monitoring",
}

#: The operator-validator's init containers (and their log prefixes) name the component they validate.
VALIDATION_LAYERS = (
    ("driver-validation", "driver"),
    ("toolkit-validation", "toolkit"),
    ("cuda-validation", "workload"),
    ("plugin-validation", "device-plugin"),
)

REQUIRED_LABELS = ("nvidia.com/gpu.present", "nvidia.com/gpu.product", "nvidia.com/gpu.count")

#: Uniform MIG profiles ``<g>g.<m>gb``: instances per GPU by compute slices (A100/H100 class GPUs).
UNIFORM_MIG_PER_GPU = {1: 7, 2: 3, 3: 2, 4: 1, 7: 1}
_UNIFORM_CONFIG = re.compile(r"^all-(\d)g\.(\d+)gb$")

PASS, FAIL, SKIP = "pass", "fail", "skipped"


def _finding(check, layer, evidence, fix):
    return {"check": check, "layer": layer, "evidence": evidence, "fix": fix}


def _layer_rank(finding):
    layer = finding["layer"]
    return LAYERS.index(layer) if layer in LAYERS else len(LAYERS)


# -------------------------------------------------------------------------------------------------- checks


def _check_host(nvml):
    if nvml.get("available"):
        return []
    return [
        _finding(
            "host",
            "driver",
            "NVML unavailable on the host: %s" % nvml.get("reason"),
            nvml.get("hint") or "Check that the NVIDIA driver is loaded on the host.",
        )
    ]


def _check_node(host, node):
    if node is None:
        return [
            _finding(
                "node",
                "node",
                "no Kubernetes node named %s among the GPU nodes" % host.get("node_name"),
                "Set k8s_node_name for this host or check that the node joined the cluster.",
            )
        ]
    if node.get("ready", True):
        return []
    cond = (node.get("conditions") or {}).get("Ready") or {}
    return [
        _finding(
            "node",
            "node",
            "node is NotReady (%s: %s)" % (cond.get("reason"), cond.get("message")),
            "Check the kubelet on the node (journalctl -u kubelet) and its network to the API server.",
        )
    ]


def _check_labels(node):
    labels = node.get("labels") or {}
    missing = [k for k in REQUIRED_LABELS if not labels.get(k)]
    if not missing and str(labels.get("nvidia.com/gpu.present")).lower() == "true":
        return []
    what = ", ".join(missing) if missing else "nvidia.com/gpu.present=%s" % labels.get("nvidia.com/gpu.present")
    return [
        _finding(
            "labels",
            "device-plugin",
            "GPU labels missing or false: %s" % what,
            "Check the gpu-feature-discovery pod on this node (it writes the nvidia.com/gpu.* labels).",
        )
    ]


def mig_enabled(node):
    """True when the node is asked to run a MIG layout (a config other than all-disabled)."""
    mig = (node.get("gpu") or {}).get("mig") or {}
    return bool(mig.get("capable")) and mig.get("config") not in (None, "", "all-disabled")


def _check_allocatable(nvml, node):
    if not nvml.get("available") or mig_enabled(node):
        return []  # no count to compare with (driver finding), or the MIG check owns the comparison
    expected = nvml.get("gpu_count") or 0
    replicas = (node.get("gpu") or {}).get("replicas")
    if isinstance(replicas, int) and replicas > 1:
        expected *= replicas  # time-slicing / MPS advertise each GPU `replicas` times
    allocatable = (node.get("allocatable") or {}).get("nvidia.com/gpu", 0) or 0
    capacity = (node.get("capacity") or {}).get("nvidia.com/gpu")
    if allocatable == expected:
        return []
    if capacity == expected and isinstance(allocatable, int) and allocatable < capacity:
        return [
            _finding(
                "allocatable",
                "gpu-health",
                "node advertises nvidia.com/gpu capacity %s but allocatable %s: the device plugin marks %d GPU(s) "
                "unhealthy" % (capacity, allocatable, capacity - allocatable),
                "Look for Xid errors (node events, dmesg, DCGM_FI_DEV_XID_ERRORS); drain the node and reset or "
                "replace the GPU.",
            )
        ]
    return [
        _finding(
            "allocatable",
            "device-plugin",
            "node advertises nvidia.com/gpu=%s but NVML counts %s GPUs" % (allocatable, expected),
            "Check the device plugin pod on this node and the GPUs it marks unhealthy.",
        )
    ]


def _validator_layer(pod):
    text = " ".join(str(pod.get(k) or "") for k in ("last_termination_container", "last_termination_message"))
    for marker, layer in VALIDATION_LAYERS:
        if marker in text:
            return layer
    return "toolkit"


def _pod_state(pod):
    why = pod.get("waiting_reason") or pod.get("last_termination_reason") or pod.get("phase")
    text = "%s pod %s is not ready (%s, %s restarts)" % (
        pod.get("component"),
        pod.get("name"),
        why,
        pod.get("restarts"),
    )
    if pod.get("last_termination_message"):
        text += "; last termination: %s" % pod["last_termination_message"]
    return text


def _check_operands(node, sandbox_events=None):
    operands = node.get("operands") or {}
    driver_ok = (operands.get("driver") or {}).get("ready", True)
    findings = []
    for component in sorted(operands):
        pod = dict(operands[component], component=component)
        if pod.get("ready") or pod.get("phase") == "Succeeded":
            continue
        layer = COMPONENT_LAYERS.get(component)
        evidence = _pod_state(pod)
        fix = "Read the logs of %s (kubectl logs --previous) and its events." % pod.get("name")
        if pod.get("waiting_reason") == "ContainerCreating" and component not in ("driver", "container-toolkit"):
            if driver_ok:
                layer = "toolkit"  # operands run with the nvidia runtime handler that the toolkit configures
                event = (sandbox_events or {}).get(pod.get("name"))
                evidence += "; %s" % (event or "its sandbox cannot be created")
                fix = (
                    "Check the container-toolkit pod and the nvidia runtime handler in the container runtime's "
                    "configuration on this node."
                )
        elif layer is None and component == "operator-validator":
            layer = _validator_layer(pod)
        findings.append(_finding("operands", layer or "toolkit", evidence, fix))
    for component in node.get("operands_missing") or []:
        findings.append(
            _finding(
                "operands",
                COMPONENT_LAYERS[component],
                "nvidia.com/gpu.deploy.%s=true but no %s pod runs on the node" % (component, component),
                "Check the %s DaemonSet (its node selector and tolerations) in the operator namespace." % component,
            )
        )
    return findings


def expected_mig_resources(node, gpu_count, layouts=None):
    """``{resource: count}`` the node should advertise for its ``nvidia.com/mig.config``, or None if unknown.

    ``layouts`` maps a config name to instances per GPU by profile (``{"all-balanced": {"1g.10gb": 2, ...}}``);
    uniform configs ``all-<g>g.<m>gb`` are derived. The strategy label decides the resource names: ``single``
    advertises every instance as ``nvidia.com/gpu``, ``mixed`` as ``nvidia.com/mig-<profile>``.
    """
    mig = (node.get("gpu") or {}).get("mig") or {}
    config = mig.get("config")
    per_gpu = (layouts or {}).get(config)
    if per_gpu is None:
        m = _UNIFORM_CONFIG.match(config or "")
        if not m or int(m.group(1)) not in UNIFORM_MIG_PER_GPU:
            return None
        per_gpu = {"%sg.%sgb" % (m.group(1), m.group(2)): UNIFORM_MIG_PER_GPU[int(m.group(1))]}
    if (mig.get("strategy") or "single") == "mixed":
        return {"nvidia.com/mig-%s" % prof: int(n) * gpu_count for prof, n in per_gpu.items()}
    return {"nvidia.com/gpu": sum(int(n) for n in per_gpu.values()) * gpu_count}


def _check_mig(nvml, node, layouts=None):
    if not mig_enabled(node):
        return []
    mig = node["gpu"]["mig"]
    if mig.get("config_state") != "success":
        return [
            _finding(
                "mig",
                "mig",
                "nvidia.com/mig.config=%s but nvidia.com/mig.config.state=%s"
                % (mig.get("config"), mig.get("config_state")),
                "Read the mig-manager pod's log on this node; check that the config exists in its ConfigMap and that "
                "no GPU process blocks the change.",
            )
        ]
    count = nvml.get("gpu_count") or (node.get("gpu") or {}).get("count") or 0
    want = expected_mig_resources(node, count, layouts)
    if want is None:
        return []
    have = node.get("allocatable") or {}
    wrong = {res: (n, have.get(res, 0)) for res, n in want.items() if have.get(res, 0) != n}
    if not wrong:
        return []
    return [
        _finding(
            "mig",
            "mig",
            "MIG config %s (%s strategy) should advertise %s; the node advertises %s"
            % (
                mig.get("config"),
                mig.get("strategy") or "single",
                ", ".join("%s=%d" % (r, w) for r, (w, _h) in sorted(wrong.items())),
                ", ".join("%s=%s" % (r, h) for r, (_w, h) in sorted(wrong.items())),
            ),
            "Check the device plugin's MIG strategy against the ClusterPolicy's mig.strategy and restart the device "
            "plugin pod.",
        )
    ]


def _check_gpu_health(nvml, monitoring):
    findings = []
    if nvml.get("health") == "critical":
        reasons = sorted({r for gpu in nvml.get("gpus") or [] for r in (gpu.get("health") or {}).get("reasons") or []})
        findings.append(
            _finding(
                "host",
                "gpu-health",
                "critical GPU health: %s" % ", ".join(reasons),
                "Drain the node and reset or replace the affected GPUs.",
            )
        )
    xid = (monitoring or {}).get("xid") or {}
    bad = {gpu: code for gpu, code in xid.items() if code}
    if bad:
        findings.append(
            _finding(
                "monitoring",
                "gpu-health",
                "DCGM_FI_DEV_XID_ERRORS: %s" % ", ".join("GPU %s Xid %s" % (g, c) for g, c in sorted(bad.items())),
                "Look the Xid up in NVIDIA's Xid catalogue; drain the node and reset or replace the GPU.",
            )
        )
    return findings


def _check_smoke(smoke):
    """The evidence leaves out the pod's name: it is unique per run (and the pod is gone), so a re-run over an
    unchanged node gives the same record."""
    if not smoke or smoke.get("status") == "passed":
        return []
    if smoke.get("status") == "pending":
        return [
            _finding(
                "smoke",
                "scheduling",
                "the smoke pod stayed Pending: %s" % smoke.get("reason"),
                "Compare the pod's GPU request and tolerations with the node's allocatable GPUs, taints and cordon.",
            )
        ]
    tail = [line for line in (smoke.get("logs") or "").splitlines() if line.strip()][-1:]
    return [
        _finding(
            "smoke",
            "workload",
            "the smoke pod failed: %s%s" % (smoke.get("reason"), "; log: %s" % tail[0] if tail else ""),
            "Run the smoke image by hand on the node; check the driver/CUDA compatibility and the GPU itself.",
        )
    ]


def _check_monitoring(nvml, node, monitoring):
    if not monitoring:
        return []
    expected = nvml.get("gpu_count") or (node.get("gpu") or {}).get("count") or 0
    if monitoring.get("source") == "prometheus":
        series = monitoring.get("series") or 0
        if series >= expected:
            return []
        return [
            _finding(
                "monitoring",
                "monitoring",
                "Prometheus has DCGM_FI_DEV_GPU_UTIL for %d of %d GPUs of this node" % (series, expected),
                "Check the dcgm-exporter pod on this node, its Service/ServiceMonitor and Prometheus' targets.",
            )
        ]
    # Without Prometheus: the node's exporter pod, the exporter Service, and the node's endpoint where one is listed.
    # EndpointSlices never list loopback or host-network addresses the API rejects, so a Ready pod whose endpoint is
    # not listed passes; a listed endpoint that is not ready fails.
    fix = "Check that the dcgm-exporter pod runs on this node (nvidia.com/gpu.deploy.dcgm-exporter) and is Ready."
    if not monitoring.get("service"):
        return [
            _finding(
                "monitoring",
                "monitoring",
                "no nvidia-dcgm-exporter Service in the operator namespace",
                "Check dcgmExporter in the ClusterPolicy; the operator creates the Service with the exporter.",
            )
        ]
    pod = (node.get("operands") or {}).get("dcgm-exporter")
    if pod is None:
        return [_finding("monitoring", "monitoring", "no nvidia-dcgm-exporter pod on this node", fix)]
    if monitoring.get("endpoint") is False:
        return [
            _finding(
                "monitoring",
                "monitoring",
                "the nvidia-dcgm-exporter endpoint of this node (pod %s) is not ready" % pod.get("name"),
                fix,
            )
        ]
    return []


def node_findings(host, node, smoke=None, monitoring=None, mig_layouts=None, sandbox_events=None):
    """Every finding of one host and its node, in check order (see :data:`CHECKS`)."""
    return node_checks(host, node, smoke, monitoring, mig_layouts, sandbox_events)[1]


def node_checks(host, node, smoke=None, monitoring=None, mig_layouts=None, sandbox_events=None):
    """``(checks, findings)``: the outcome of each check by name (pass/fail/skipped) and the findings."""
    nvml = host.get("nvidia_gpu") or {}
    outcome = {}
    findings = []

    def record(name, found, ran=True):
        outcome[name] = FAIL if found else (PASS if ran else SKIP)
        findings.extend(found)

    record("host", _check_host(nvml))
    record("node", _check_node(host, node))
    if node is None:
        for name, _unused in CHECKS[2:]:
            outcome[name] = SKIP
        return outcome, findings
    record("labels", _check_labels(node))
    record("allocatable", _check_allocatable(nvml, node), ran=bool(nvml.get("available")) and not mig_enabled(node))
    record("operands", _check_operands(node, sandbox_events))
    record("mig", _check_mig(nvml, node, mig_layouts), ran=mig_enabled(node))
    record("smoke", _check_smoke(smoke), ran=smoke is not None)
    record("monitoring", _check_monitoring(nvml, node, monitoring), ran=monitoring is not None)
    health = _check_gpu_health(nvml, monitoring)
    if health:
        findings.extend(health)
        for f in health:
            outcome[f["check"]] = FAIL
    return outcome, findings


def failing_layer(findings):
    return min(findings, key=_layer_rank)["layer"] if findings else None


# ---------------------------------------------------------------------------------------- inputs from the role


def prometheus_by_node(series_result=None, xid_result=None, node_label="Hostname"):
    """Per node ``{"source": "prometheus", "series": n, "xid": {gpu: code}}`` from two instant-query results.

    ``series_result`` is the ``data.result`` of ``count by (<node_label>) (DCGM_FI_DEV_GPU_UTIL)``;
    ``xid_result`` that of ``DCGM_FI_DEV_XID_ERRORS`` (one sample per GPU, label ``gpu``).
    """
    out = {}
    for sample in series_result or []:
        node = (sample.get("metric") or {}).get(node_label)
        if node:
            entry = out.setdefault(node, {"source": "prometheus", "series": 0, "xid": {}})
            entry["series"] += int(float(sample["value"][1]))
    for sample in xid_result or []:
        metric = sample.get("metric") or {}
        node = metric.get(node_label)
        if node:
            entry = out.setdefault(node, {"source": "prometheus", "series": 0, "xid": {}})
            code = int(float(sample["value"][1]))
            entry["xid"][str(metric.get("gpu"))] = max(code, entry["xid"].get(str(metric.get("gpu")), 0))
    return out


def endpoints_by_node(endpoint_slices):
    """Per node ``{"source": "endpoints", "endpoint": ready}`` for each node with a listed exporter endpoint
    (``ready`` False when it is listed as not ready)."""
    out = {}
    for eps in endpoint_slices or []:
        for ep in eps.get("endpoints") or []:
            node = ep.get("nodeName")
            if node:
                ready = (ep.get("conditions") or {}).get("ready") is not False
                out[node] = {"source": "endpoints", "endpoint": ready or out.get(node, {}).get("endpoint", False)}
    return out


def sandbox_events_by_pod(events):
    """``{pod name: message}`` of the newest FailedCreatePodSandBox event per pod."""
    out = {}
    for ev in sorted(events or [], key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or ""):
        obj = ev.get("involvedObject") or ev.get("involved_object") or {}
        if obj.get("kind") == "Pod" and obj.get("name"):
            out[obj["name"]] = ev.get("message")
    return out


# ------------------------------------------------------------------------------------------------ the fleet


def fleet_summary(hosts, nodes, smoke=None, monitoring=None, mig_layouts=None, sandbox_events=None):
    """One row per host: the node's GPU view, the host's NVML view, each check and the verdict.

    ``hosts`` maps an inventory host name to ``{node_name, pool, nvidia_gpu}``; ``nodes`` is gpu_cluster_info's
    ``nodes``; ``smoke`` is gpu_smoke_test's ``results`` (None: not run); ``monitoring`` is either
    ``{"source": "prometheus", "series": <count by node result>, "xid": <xid result>, "node_label": ...}`` or
    ``{"source": "endpoints", "service": <the exporter Service exists>, "endpoint_slices": [...]}`` (None: not
    checked); ``sandbox_events`` raw Event dicts.
    """
    per_node_monitoring = None
    if monitoring:
        if monitoring.get("source") == "prometheus":
            per_node_monitoring = prometheus_by_node(
                monitoring.get("series"), monitoring.get("xid"), monitoring.get("node_label") or "Hostname"
            )
            empty = {"source": "prometheus", "series": 0, "xid": {}}
        else:
            service = bool(monitoring.get("service"))
            per_node_monitoring = {
                node: dict(entry, service=service)
                for node, entry in endpoints_by_node(monitoring.get("endpoint_slices")).items()
            }
            empty = {"source": "endpoints", "service": service, "endpoint": None}
    events = sandbox_events_by_pod(sandbox_events)
    rows = []
    for name in sorted(hosts):
        host = hosts[name]
        node_name = host.get("node_name") or name
        node = nodes.get(node_name)
        nvml = host.get("nvidia_gpu") or {}
        mon = None if per_node_monitoring is None else per_node_monitoring.get(node_name, empty)
        smoke_result = None if smoke is None else smoke.get(node_name, {"status": "failed", "reason": "not run"})
        checks, findings = node_checks(host, node, smoke_result, mon, mig_layouts, events)
        layer = failing_layer(findings)
        rows.append(
            {
                "host": name,
                "node": node_name,
                "pool": host.get("pool"),
                "nvml_gpus": nvml.get("gpu_count"),
                "driver_version": nvml.get("driver_version"),
                "health": nvml.get("health"),
                "allocatable": (node or {}).get("allocatable", {}),
                "product": ((node or {}).get("gpu") or {}).get("product"),
                "mig_config": (((node or {}).get("gpu") or {}).get("mig") or {}).get("config"),
                # status and reason only: the pod name and duration differ each run (gpu_smoke_test returns them)
                "smoke": None if smoke_result is None else {k: smoke_result.get(k) for k in ("status", "reason")},
                "checks": checks,
                "verdict": FAIL if findings else PASS,
                "failing_layer": layer,
                "evidence": [f["evidence"] for f in findings if f["layer"] == layer],
                "findings": sorted(findings, key=_layer_rank),
            }
        )
    by_layer = {}
    for r in rows:
        if r["failing_layer"]:
            by_layer[r["failing_layer"]] = by_layer.get(r["failing_layer"], 0) + 1
    return {
        "rows": rows,
        "passed": sum(1 for r in rows if r["verdict"] == PASS),
        "failed": sum(1 for r in rows if r["verdict"] == FAIL),
        "failed_by_layer": by_layer,
        "layers": list(LAYERS),
        "checks": [{"name": n, "description": d} for n, d in CHECKS],
    }


def should_fail(summary, fail_on="any", layers=None):
    """The failure message the play should stop with under ``fail_on``, or None.

    ``any``: any failing node; ``never``: never; ``layers``: a node failing at one of ``layers``.
    """
    if fail_on == "never":
        return None
    failing = [r for r in summary["rows"] if r["verdict"] == FAIL]
    if fail_on == "layers":
        failing = [r for r in failing if r["failing_layer"] in (layers or ())]
    if not failing:
        return None
    return "%d GPU node(s) failed validation: %s" % (
        len(failing),
        "; ".join("%s at layer %s" % (r["node"], r["failing_layer"]) for r in failing),
    )


def summary_lines(summary):
    """A plain-text table of the summary, for the play's output; columns as wide as their longest value."""
    head = ("node", "pool", "product", "nvml", "alloc", "verdict", "layer", "evidence")
    rows = []
    for r in summary["rows"]:
        alloc = sum(v for v in r["allocatable"].values() if isinstance(v, int)) if r["allocatable"] else 0
        rows.append(
            (
                r["node"],
                r["pool"] or "-",
                r["product"] or "-",
                str(r["nvml_gpus"]),
                str(alloc),
                r["verdict"],
                r["failing_layer"] or "-",
                (r.get("evidence") or ["-"])[0][:120],
            )
        )
    widths = [max(len(row[i]) for row in [head] + rows) for i in range(len(head) - 1)]
    right = (3, 4)  # the counts

    def line(cells):
        out = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths))]
        return " ".join(out + [cells[-1]])

    lines = [line(head)] + [line(row) for row in rows]
    lines.append("%d passed, %d failed" % (summary["passed"], summary["failed"]))
    return lines


def _md(text):
    return str(text if text is not None else "-").replace("|", "\\|").replace("\n", " ")


def summary_markdown(summary, title="GPU validation report", generated=None):
    """The report as Markdown: totals, one table row per node with each check, then the evidence per failure."""
    names = [n for n, _d in CHECKS]
    mark = {PASS: "ok", FAIL: "**FAIL**", SKIP: "-"}
    out = ["# %s" % title, ""]
    if generated:
        out += ["Generated %s." % generated, ""]
    out.append(
        "**%d passed, %d failed** of %d GPU nodes." % (summary["passed"], summary["failed"], len(summary["rows"]))
    )
    if summary.get("failed_by_layer"):
        out.append("")
        out.append(
            "Failing layers: "
            + ", ".join(
                "%s (%d)" % (k, v)
                for k, v in sorted(
                    summary["failed_by_layer"].items(), key=lambda kv: LAYERS.index(kv[0]) if kv[0] in LAYERS else 99
                )
            )
            + "."
        )
    out += ["", "| node | pool | product | verdict | layer | " + " | ".join(names) + " |"]
    out.append("|" + "---|" * (5 + len(names)))
    for r in summary["rows"]:
        out.append(
            "| %s | %s | %s | %s | %s | %s |"
            % (
                _md(r["node"]),
                _md(r["pool"]),
                _md(r["product"]),
                "pass" if r["verdict"] == PASS else "**fail**",
                _md(r["failing_layer"]),
                " | ".join(mark.get(r["checks"].get(n), "-") for n in names),
            )
        )
    failing = [r for r in summary["rows"] if r["verdict"] == FAIL]
    if failing:
        out += ["", "## Failures", ""]
        for r in failing:
            out.append("### %s: %s" % (r["node"], r["failing_layer"]))
            out.append("")
            for f in r["findings"]:
                out.append(
                    "- **%s** (%s check): %s. Fix: %s"
                    % (f["layer"], f["check"], _md(f["evidence"]).rstrip("."), _md(f["fix"]))
                )
            out.append("")
    out += ["", "Checks: " + "; ".join("%s = %s" % (n, d) for n, d in CHECKS) + "."]
    return "\n".join(out).rstrip() + "\n"
