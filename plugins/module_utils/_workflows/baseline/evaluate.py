# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change incompatibly at any
# time, including in a patch release. Do not use it elsewhere.

"""Running the checks: every built-in and user check of one scope, skips and severity overrides applied, into
``{results, verdict, findings, lines}``."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline.model import (
    FAIL,
    SEVERITIES,
    SKIPPED,
    Outcome,
    bad,
    ok,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline.registry import REGISTRY


def evaluate_host(ctx, opts):
    """Every host check (and user check with scope host) for one host: ``{results, verdict, findings}``."""
    results = _builtin("host", (ctx, opts), opts)
    for uc in opts["user_checks"]:
        if (uc.get("scope") or "host") != "host":
            continue
        results.append(_user_result(uc, (ctx.get("user_checks") or {}).get(uc["id"]), opts))
    return summarise(results)


def evaluate_cluster(cluster, hosts, opts):
    """Every cluster check (and user check with scope cluster) over the cluster view and all hosts."""
    results = _builtin("cluster", (cluster, hosts, opts), opts)
    for uc in opts["user_checks"]:
        if uc.get("scope") == "cluster":
            results.append(_user_result(uc, None, opts))
    return summarise(results)


def _builtin(scope, args, opts):
    """The results of the built-in checks of ``scope`` that apply to the install mode, by id, each called with
    ``args`` unless skipped; a check that names its layer has it in its result."""
    results = []
    for cid in sorted(REGISTRY):
        c = REGISTRY[cid]
        if c.scope != scope or not c.applies(opts["operator_mode"]):
            continue
        if cid in opts["skip"]:
            res = _skipped(cid, scope, c.severity, c.title, opts)
        else:
            res = _result(cid, scope, c.severity, c.title, c.fn(*args), opts)
        if c.layer:
            res["layer"] = c.layer
        results.append(res)
    return results


def _result(check_id, scope, severity, title, outcome, opts):
    sev = opts["severity"].get(check_id, severity)
    if outcome.at_most and SEVERITIES.index(sev) < SEVERITIES.index(outcome.at_most):
        sev = outcome.at_most
    res = {"id": check_id, "scope": scope, "severity": sev, "title": title, "status": outcome.status}
    res["evidence"] = outcome.evidence
    res["fix"] = outcome.fix if outcome.status == FAIL else None
    if scope == "cluster":
        res["subjects"] = outcome.subjects
    return res


def _skipped(check_id, scope, severity, title, opts):
    return _result(check_id, scope, severity, title, Outcome(SKIPPED, "skipped by gpu_baseline_skip"), opts)


def _user_result(uc, value, opts):
    """A user check's result; ``value`` is what the role templated for it on the host (None: ``uc`` itself)."""
    sev = uc.get("severity", "fail")
    title = uc.get("description") or uc["id"]
    if uc["id"] in opts["skip"]:
        return _skipped(uc["id"], uc.get("scope") or "host", sev, title, opts)
    value = value if value is not None else uc
    failed = value.get("failed")
    if isinstance(failed, str):
        failed = failed.strip().lower() in ("true", "yes", "1")
    outcome = (
        bad(value.get("evidence") or "user check %s failed" % uc["id"], uc.get("fix") or "See the check's description.")
        if failed
        else ok(value.get("pass_evidence") or value.get("evidence") or "user check %s passed" % uc["id"])
    )
    return _result(uc["id"], uc.get("scope") or "host", sev, title, outcome, opts)


def verdict(results):
    """``fail`` when a failed result has severity fail, else ``warn`` when one has warn, else ``pass``."""
    fails = [r for r in results if r["status"] == FAIL]
    if any(r["severity"] == "fail" for r in fails):
        return "fail"
    if any(r["severity"] == "warn" for r in fails):
        return "warn"
    return "pass"


def finding_line(f):
    """One finding as a line: id, severity, evidence and fix."""
    return "%s [%s]: %s -- fix: %s" % (f["id"], f["severity"], f["evidence"], f["fix"])


def summarise(results):
    """``{results, verdict, findings, lines}`` of a list of results."""
    findings = [r for r in results if r["status"] == FAIL]
    return {
        "results": results,
        "verdict": verdict(results),
        "findings": findings,
        "lines": [finding_line(f) for f in findings],
    }
