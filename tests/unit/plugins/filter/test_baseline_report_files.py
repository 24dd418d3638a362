"""The baseline_report_files filter: baseline.json and baseline.md, kept from the previous report while its verdict
record is the same, so a re-run over the same fleet rewrites nothing."""

import copy
import json

from ansible_collections.gpuops.gpu_operator.plugins.filter.baseline_report import FilterModule as Report
from ansible_collections.gpuops.gpu_operator.plugins.filter.baseline_report_files import FilterModule

PASSED = {"results": [], "findings": [], "verdict": "pass"}


def files(report, previous=None):
    return FilterModule().filters()["baseline_report_files"](report, previous)


def cluster(runtime_class=False, version="v1.36.3"):
    """gpu_preflight_info's result; the RuntimeClass exists after an install (the evidence of a passing check)."""
    return {
        "kubernetes_version": {"git_version": version},
        "nodes": {
            "gpu-a": {
                "name": "gpu-a",
                "gpu": True,
                "all_labels": {},
                "taints": [],
                "container_runtime_version": "containerd://2.1.4",
            }
        },
        "nfd": {"daemonsets": []},
        "crds": {"servicemonitors.monitoring.coreos.com": True},
        "runtime_class": {"exists": runtime_class, "handler": "nvidia"} if runtime_class else {"exists": False},
        "namespace": {"exists": False},
        "cluster_policy": {"exists": False},
        "access": [{"identity": "automation", "checked": 3, "missing": []}],
    }


def report(cl):
    return Report().filters()["baseline_report"]({"gpu-a": {"baseline": PASSED}}, cl, {})


def test_the_files_are_the_report_as_sorted_json_without_its_markdown_and_the_markdown():
    rep = report(cluster())
    out = files(rep)
    doc = json.loads(out["json"])
    assert "markdown" not in doc and doc["verdict"] == rep["verdict"] and out["json"].endswith("}\n")
    assert out["json"] == json.dumps(doc, indent=4, sort_keys=True, separators=(",", ": ")) + "\n"
    assert out["markdown"] == rep["markdown"]


def test_the_previous_files_stay_while_only_the_evidence_of_passing_checks_moved():
    before = files(report(cluster()))
    after_install = report(cluster(runtime_class=True))
    runtime = [r for r in after_install["cluster"]["results"] if r["id"] == "runtimeclass.nvidia"][0]
    assert (
        runtime["status"] == "pass"
        and runtime["evidence"]
        != [r for r in json.loads(before["json"])["cluster"]["results"] if r["id"] == "runtimeclass.nvidia"][0][
            "evidence"
        ]
    )
    assert files(after_install, before["json"]) == before
    assert files(after_install, json.loads(before["json"])) == before  # a dict works too


def test_a_changed_verdict_or_finding_renders_the_new_report():
    before = files(report(cluster()))
    old_k8s = report(cluster(version="v1.31.4"))  # k8s.version now fails
    assert files(old_k8s, before["json"]) == files(old_k8s)
    assert json.loads(files(old_k8s, before["json"])["json"])["verdict"] == "fail"


def test_an_unreadable_or_foreign_previous_report_is_ignored():
    rep = report(cluster())
    for previous in (None, "", "not json", "[1, 2]", json.dumps({"kind": "something else"})):
        assert files(rep, previous) == files(rep)


def test_the_previous_markdown_is_rendered_from_the_previous_json():
    before = files(report(cluster()))
    doc = json.loads(before["json"])
    edited = copy.deepcopy(doc)
    for r in edited["cluster"]["results"]:
        if r["status"] == "pass":
            r["evidence"] = "as it was"
    kept = files(report(cluster()), json.dumps(edited))
    assert json.loads(kept["json"]) == edited and "as it was" in kept["markdown"]
