"""The baseline_console filter: the verdict, then every distinct finding once with the hosts it was found on."""

from ansible_collections.gpuops.gpu_operator.plugins.filter.baseline_console import FilterModule


def console(report, **kw):
    return FilterModule().filters()["baseline_console"](report, **kw)


def finding(fid, severity="warn", evidence="seen", fix="Do it.", scope="host"):
    return {"id": fid, "severity": severity, "evidence": evidence, "fix": fix, "scope": scope, "status": "fail"}


RUNTIME = finding("runtime.version", evidence="a containerd://1.7.27, b containerd://1.7.27", scope="cluster")


def report(hosts, cluster_findings=(), verdict="warn"):
    rows = {name: {"verdict": "warn" if fs else "pass", "findings": list(fs)} for name, fs in hosts.items()}
    counts = {"pass": 0, "warn": 0, "fail": 0}
    for r in rows.values():
        counts[r["verdict"]] += 1
    return {
        "verdict": verdict,
        "counts": counts,
        "operator_version": "v26.7.0",
        "driver_policy": "preinstalled",
        "hosts": rows,
        "cluster": {"findings": list(cluster_findings)},
    }


def test_a_finding_on_every_host_is_one_line_naming_all_hosts():
    rep = report({h: [finding("driver.host_supported"), RUNTIME] for h in ("a", "b", "c")}, [RUNTIME])
    assert console(rep) == [
        "GPU baseline warn: 0 pass, 3 warn, 0 fail of 3 GPU host(s); operator v26.7.0, driver policy preinstalled",
        "warn driver.host_supported on all 3 GPU hosts: seen -- fix: Do it.",
        "warn runtime.version on all 3 GPU hosts: a containerd://1.7.27, b containerd://1.7.27 -- fix: Do it.",
    ]


def test_a_finding_on_some_hosts_names_them_and_different_evidence_is_another_line():
    rep = report(
        {
            "a": [finding("kernel_module.recommended")],
            "b": [finding("kernel_module.recommended")],
            "c": [finding("kernel_module.recommended", evidence="other")],
            "d": [],
        }
    )
    assert console(rep)[1:] == [
        "warn kernel_module.recommended on c: other -- fix: Do it.",
        "warn kernel_module.recommended on a, b: seen -- fix: Do it.",
    ]


def test_most_severe_first_then_by_id_and_cluster_findings_once():
    rep = report(
        {"a": [finding("z.warn"), finding("a.info", severity="info")], "b": [finding("m.fail", severity="fail")]},
        [finding("k8s.version", severity="fail", scope="cluster")],
        verdict="fail",
    )
    order = [x.split(" on ")[0] for x in console(rep)[1:]]
    assert order == ["fail k8s.version", "fail m.fail", "warn z.warn", "info a.info"]
    assert "fail k8s.version on the cluster: seen -- fix: Do it." in console(rep)


def test_long_host_lists_are_cut_and_the_reports_are_named_last():
    rep = report({"h%02d" % i: [finding("x")] for i in range(12)} | {"other": []})
    lines = console(rep, reports=["/r/baseline.json", "/r/baseline.md"], host_limit=3)
    assert lines[1] == "warn x on h00, h01, h02 and 9 more: seen -- fix: Do it."
    assert lines[-1] == "reports: /r/baseline.json, /r/baseline.md"


def test_a_clean_baseline_is_the_verdict_line_only():
    assert console(report({"a": []}, verdict="pass")) == [
        "GPU baseline pass: 1 pass, 0 warn, 0 fail of 1 GPU host(s); operator v26.7.0, driver policy preinstalled"
    ]
