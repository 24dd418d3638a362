# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""The gpu_compat lookup and the baseline filters, called the way a playbook calls them."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError, AnsibleLookupError

from ansible_collections.gpuops.gpu_operator.plugins.filter.baseline_host import baseline_host
from ansible_collections.gpuops.gpu_operator.plugins.filter.baseline_options import baseline_options
from ansible_collections.gpuops.gpu_operator.plugins.filter.baseline_report import baseline_report
from ansible_collections.gpuops.gpu_operator.plugins.lookup.gpu_compat import LookupModule


def lookup(*terms, **kw):
    return LookupModule().run(list(terms), variables={}, **kw)


def test_release_rows_per_term():
    rows = lookup("v26.7.0", "25.10")
    assert [r["release"] for r in rows] == ["26.7", "25.10"]
    assert rows[0]["kubernetes"] == ["1.32", "1.37"]


def test_cuda_kernel_module_and_matrix_kinds():
    assert lookup("12.8", "13.0", kind="cuda") == ["525", "580.65.06"]
    assert lookup("blackwell", kind="kernel_module")[0]["module"] == "open"
    assert set(lookup(kind="matrix")[0]["releases"]) == {"24.9", "25.3", "25.10", "26.3", "26.7"}


def test_unknown_release_is_a_lookup_error_naming_the_known_ones():
    with pytest.raises(AnsibleLookupError, match="known releases: 24.9, 25.3, 25.10, 26.3, 26.7"):
        lookup("v99.1.0")


def test_filters_turn_bad_options_into_filter_errors_naming_the_ids():
    with pytest.raises(AnsibleFilterError, match="unknown check id\\(s\\): no.such"):
        baseline_options({"skip": ["no.such"]})
    with pytest.raises(AnsibleFilterError, match="unknown check id\\(s\\): no.such"):
        baseline_host({}, {"skip": ["no.such"]})
    with pytest.raises(AnsibleFilterError, match="unknown check id\\(s\\): no.such"):
        baseline_report({}, {}, {"skip": ["no.such"]})


def test_baseline_options_lists_the_checks_with_overridden_severities():
    out = baseline_options({"severity": {"nouveau.loaded": "warn"}, "user_checks": [{"id": "site.x", "failed": False}]})
    sev = {c["id"]: c["severity"] for c in out["checks"]}
    assert sev["nouveau.loaded"] == "warn" and sev["site.x"] == "fail" and sev["kernel.headers"] == "fail"
    assert out["target_driver"] == "595.91.07"


def test_baseline_report_carries_markdown():
    cluster = {
        "kubernetes_version": {"git_version": "v1.36.3"},
        "crds": {"servicemonitors.monitoring.coreos.com": True},
    }
    rep = baseline_report({}, cluster, {})
    assert rep["verdict"] == "pass" and rep["markdown"].startswith("# GPU baseline: PASS")
    rep = baseline_report({}, dict(cluster, crds={}), {})
    assert rep["verdict"] == "warn" and "| servicemonitor.scrape | warn | fail |" in rep["markdown"]


def test_unknown_kind_is_an_error():
    with pytest.raises(AnsibleLookupError, match="kind='os'"):
        lookup("v26.7.0", kind="os")


def test_user_checks_given_apart_replace_those_in_the_options():
    checks = [{"id": "site.x", "failed": True, "evidence": "x is off", "fix": "turn x on"}]
    res = baseline_host({}, {"user_checks": [{"id": "site.y", "failed": False}]}, checks)
    ids = [r["id"] for r in res["results"]]
    assert "site.x" in ids and "site.y" not in ids
    assert [f["id"] for f in res["findings"] if f["id"].startswith("site.")] == ["site.x"]
