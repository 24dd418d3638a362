# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The GPU Operator release life cycle behind the ``gpu_operator`` module.

* :class:`ReleaseParams` - the one params object (built from module params);
* version gates per the GPU Operator life-cycle policy (reference §8): upgrades within a major release
  (``YY.MM``) or to the next one only; no downgrade without ``force``;
* :func:`crd_changes` - what applying the target chart's CRDs changes (fields added/removed per CRD);
* :class:`OperatorRelease` - plan (check mode), CRDs by server-side apply before any install or upgrade, one
  ``helm upgrade --install``, rollback on failure, bounded ClusterPolicy readiness wait, uninstall.

Idempotence: nothing is written when the deployed chart version and its user-supplied values (``helm get values``)
equal the target version and the effective values, and the CRDs already match.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import os
import re
import tempfile
import time

try:
    import yaml
except ImportError:  # pragma: no cover - PyYAML ships with ansible-core
    yaml = None

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.cluster_view import cluster_view
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.helm import REPO_ALIAS, ChartRef, HelmError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.k8s import K8sError, default_kubeconfig_path
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.errors import GpuOpsError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.values import (
    NFD_LABEL_PREFIX,
    SERVICE_MONITOR_CRD,
    ValuesError,
    deep_merge,
    effective_values,
)

FIELD_MANAGER = "gpuops-gpu-operator"
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
CLUSTER_POLICY_PATH = "/apis/nvidia.com/v1/clusterpolicies"
#: GPU Operator major releases (``YY.MM``) per the release tags (reference §1); versions seen in a chart
#: repository index are added to these.
KNOWN_MAJORS = ((24, 3), (24, 6), (24, 9), (25, 3), (25, 10), (26, 3), (26, 7))
#: CRDs the GPU Operator chart ships (reference §4, §8); ``remove_crds`` deletes these when present.
OPERATOR_CRDS = (
    "clusterpolicies.nvidia.com",
    "nvidiadrivers.nvidia.com",
    "gpuclusters.nvidia.com",
)


class ReleaseError(GpuOpsError):
    """A refusal or failure; ``msg`` names the input and the fix, ``details`` go into the module result."""

    def __init__(self, msg, **details):
        super().__init__(msg, details=details)


def operator_version(text):
    """``"v26.3.3"`` -> ``(26, 3, 3)``; raise ReleaseError for anything else."""
    match = re.match(r"^v?(\d+)\.(\d+)\.(\d+)", str(text or ""))
    if not match:
        raise ReleaseError("chart version %r is not a GPU Operator version (YY.MM.PP, for example v26.7.0)" % (text,))
    return tuple(int(x) for x in match.groups())


def version_gate(current, target, majors=(), force=False):
    """None when upgrading ``current`` -> ``target`` is allowed, else the reason (a sentence).

    Life-cycle policy: "Upgrades are only supported within a major release or to the next major release"; a
    major release is ``YY.MM``. Downgrades are never supported. ``force`` lifts both refusals.
    """
    cur, tgt = operator_version(current), operator_version(target)
    if tgt == cur or force:
        return None
    if tgt < cur:
        return (
            "downgrade from %s to %s is not supported by the GPU Operator (CRDs and operands are not rolled back); "
            "set force: true to do it anyway" % (current, target)
        )
    known = sorted(set(KNOWN_MAJORS) | set(majors) | {cur[:2], tgt[:2]})
    later = [m for m in known if m > cur[:2]]
    allowed = {cur[:2]} | ({later[0]} if later else set())
    if tgt[:2] in allowed:
        return None
    skipped = [m for m in known if cur[:2] < m < tgt[:2]]
    return (
        "upgrade from %s to %s skips the major release(s) %s; the GPU Operator life-cycle policy supports upgrades "
        "only within a major release or to the next one. Upgrade to v%d.%d.x first (or set force: true)"
        % (current, target, ", ".join("%d.%d" % m for m in skipped), later[0][0], later[0][1])
    )


# --------------------------------------------------------------------------------------------------
# Params


class ReleaseParams:
    """Everything the life cycle needs, from the module's params (one object, never loose arguments)."""

    FIELDS = (
        "state",
        "release_name",
        "release_namespace",
        "chart_ref",
        "chart_repo_url",
        "chart_version",
        "chart_repo_username",
        "chart_repo_password",
        "values",
        "values_files",
        "fleet",
        "detect",
        "force",
        "force_conflicts",
        "wait",
        "timeout",
        "ready_timeout",
        "remove_crds",
        "create_namespace",
        "helm_binary",
        "kubeconfig",
        "context",
    )

    def __init__(self, **kwargs):
        for name in self.FIELDS:
            setattr(self, name, kwargs.get(name))
        self.values = self.values or {}
        self.values_files = self.values_files or []

    @classmethod
    def from_module(cls, params):
        return cls(**{k: params.get(k) for k in cls.FIELDS})

    def chart(self):
        try:
            return ChartRef(self.chart_ref, self.chart_repo_url)
        except ValueError as exc:
            raise ReleaseError(str(exc)) from exc

    def user_values(self):
        """``values_files`` in order, then ``values`` on top (the user's explicit values)."""
        merged = {}
        for path in self.values_files:
            try:
                with open(os.path.expanduser(path), "rb") as handle:
                    data = yaml.safe_load(handle) or {}
            except (OSError, yaml.YAMLError) as exc:
                raise ReleaseError("values_files entry %s could not be read as YAML: %s" % (path, exc)) from exc
            if not isinstance(data, dict):
                raise ReleaseError("values_files entry %s is not a mapping of chart values" % path)
            merged = deep_merge(merged, data)
        return deep_merge(merged, self.values)


def helm_kubeconfig(kubeconfig, tmpdir):
    """A kubeconfig path for helm: the given path, an inline dict written 0600 to ``tmpdir``, or the default."""
    if isinstance(kubeconfig, dict):
        path = os.path.join(tmpdir, "kubeconfig")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            json.dump(kubeconfig, handle)
        return path
    if kubeconfig:
        return os.path.expanduser(str(kubeconfig))
    path = default_kubeconfig_path()
    return path if os.path.exists(path) else None


# --------------------------------------------------------------------------------------------------
# CRDs


def schema_fields(schema, prefix=""):
    """Dotted field paths of an openAPIV3Schema (``spec.driver.version``...), arrays as ``[]``."""
    out = set()
    if not isinstance(schema, dict):
        return out
    for name, sub in (schema.get("properties") or {}).items():
        path = prefix + name
        out.add(path)
        out |= schema_fields(sub, path + ".")
    items = schema.get("items")
    if isinstance(items, dict):
        out |= schema_fields(items, prefix.rstrip(".") + "[].")
    return out


def _version_fields(crd):
    return {
        v.get("name"): schema_fields(((v.get("schema") or {}).get("openAPIV3Schema")) or {})
        for v in (crd.get("spec") or {}).get("versions") or []
    }


def _comparable(crd):
    spec = copy.deepcopy(crd.get("spec") or {})
    if (spec.get("conversion") or {}).get("strategy") == "None":
        spec.pop("conversion")  # the server's default, absent from chart files
    return json.loads(json.dumps(spec, sort_keys=True))


def crd_changes(target_crds, live_by_name):
    """Per target CRD: ``action`` (``create``/``update``/``none``) and the fields added or removed per version."""
    changes = []
    for crd in target_crds:
        name = (crd.get("metadata") or {}).get("name")
        live = live_by_name.get(name)
        if live is None:
            changes.append({"name": name, "action": "create", "fields_added": [], "fields_removed": []})
            continue
        added, removed = [], []
        want, have = _version_fields(crd), _version_fields(live)
        for version, fields in sorted(want.items()):
            old = have.get(version, set())
            added += ["%s:%s" % (version, f) for f in sorted(fields - old)]
            removed += ["%s:%s" % (version, f) for f in sorted(old - fields)]
        same = not added and not removed and _spec_subset(_comparable(crd), _comparable(live))
        changes.append(
            {"name": name, "action": "none" if same else "update", "fields_added": added, "fields_removed": removed}
        )
    return changes


def _spec_subset(want, have):
    """True when every key in ``want`` has the same value in ``have`` (the server adds defaults)."""
    if isinstance(want, dict):
        return isinstance(have, dict) and all(k in have and _spec_subset(v, have[k]) for k, v in want.items())
    if isinstance(want, list):
        return isinstance(have, list) and len(want) == len(have) and all(_spec_subset(a, b) for a, b in zip(want, have))
    return want == have


def value_changes(before, after, prefix=""):
    """Dotted paths whose value differs between two values dicts (added, removed or changed)."""
    paths = []
    keys = set(before or {}) | set(after or {})
    for key in sorted(keys, key=str):
        path = prefix + str(key)
        a, b = (before or {}).get(key, None), (after or {}).get(key, None)
        if isinstance(a, dict) and isinstance(b, (dict, type(None))) or isinstance(b, dict) and a is None:
            paths += value_changes(a or {}, b or {}, path + ".") or ([path] if (a is None) != (b is None) else [])
        elif a != b or (key in (before or {})) != (key in (after or {})):
            paths.append(path)
    return paths


def _normalised(values):
    return json.loads(json.dumps(values or {}, sort_keys=True))


# --------------------------------------------------------------------------------------------------
# The life cycle


class OperatorRelease:
    """One run of the module: ``helm`` is a :class:`_helm.Helm`, ``kube`` a :class:`_k8s.K8sClient`."""

    def __init__(self, params, helm, kube, check_mode=False, diff=False, sleep=time.sleep, clock=time.monotonic):
        self.p = params
        self.helm = helm
        self.kube = kube
        self.check_mode = check_mode
        self.diff = diff
        self.sleep = sleep
        self.clock = clock
        self.warnings = []

    # -- reads -------------------------------------------------------------------------------------

    def deployed(self):
        return self.helm.release(self.p.release_name, self.p.release_namespace)

    def cluster_facts(self):
        """``nfd_labels`` and ``service_monitor_crd`` from two requests (paginated node LIST, one CRD GET)."""
        if not self.p.detect:
            return {}
        nodes = self.kube.list_core("nodes")
        nfd = any(
            k.startswith(NFD_LABEL_PREFIX) for n in nodes for k in ((n.get("metadata") or {}).get("labels") or {})
        )
        crd = self.kube.get_or_none("%s/%s" % (CRD_PATH, SERVICE_MONITOR_CRD), what="read the ServiceMonitor CRD")
        return {"nfd_labels": nfd, "service_monitor_crd": crd is not None}

    def live_crds(self, names):
        out = {}
        for name in names:
            obj = self.kube.get_or_none("%s/%s" % (CRD_PATH, name), what="read CRD %s" % name)
            if obj is not None:
                out[name] = obj
        return out

    def repo_majors(self, chart):
        """``YY.MM`` majors the repository publishes (empty for OCI and local charts)."""
        if chart.kind != "repo":
            return set()
        rc, out, _err = self.helm.run(
            ["search", "repo", "%s/%s" % (REPO_ALIAS, chart.name), "--versions", "-o", "json"],
            cluster=False,
            check=False,
        )
        if rc != 0:
            return set()
        majors = set()
        for entry in json.loads(out or "[]"):
            try:
                majors.add(operator_version(entry.get("version"))[:2])
            except ReleaseError:
                continue
        return majors

    # -- plan --------------------------------------------------------------------------------------

    def plan(self):
        """Everything ``present`` would do, without writing: the dict returned as ``plan``."""
        p = self.p
        chart = p.chart()
        try:
            meta = self.helm.show_chart(chart, p.chart_version)
        except HelmError as exc:
            raise ReleaseError(exc.msg, **exc.details) from exc
        target = str(meta.get("version"))
        deployed = self.deployed()
        current = deployed["chart_version"] if deployed else None
        if deployed:
            reason = version_gate(current, target, self.repo_majors(chart), force=p.force)
            if reason:
                raise ReleaseError(reason, refused=True, from_version=current, to_version=target)
            elif operator_version(target) < operator_version(current):
                self.warnings.append("downgrading %s -> %s because force is set" % (current, target))
        chart_defaults = self.helm.show_values(chart, target)
        deployed_values = self.helm.get_values(p.release_name, p.release_namespace) if deployed else None
        try:
            values, reasons = effective_values(
                chart_defaults, p.user_values(), p.fleet, self.cluster_facts(), deployed_values
            )
        except ValuesError as exc:
            raise ReleaseError(str(exc)) from exc
        values = _normalised(values)
        target_crds = self.helm.show_crds(chart, target)
        names = [c["metadata"]["name"] for c in target_crds]
        crds = crd_changes(target_crds, self.live_crds(names))
        values_diff = value_changes(_normalised(deployed_values), values) if deployed else []
        deployed_values = deployed_values or {}
        healthy = deployed is not None and deployed.get("status") == "deployed"
        if not deployed:
            action = "install"
        elif current != target:
            action = "upgrade"
        elif values_diff or not healthy:
            action = "update"
        elif any(c["action"] != "none" for c in crds):
            action = "crds"
        else:
            action = "none"
        return {
            "action": action,
            "chart": chart.describe(),
            "from_version": current,
            "to_version": target,
            "app_version": meta.get("appVersion"),
            "release_status": deployed.get("status") if deployed else None,
            "values_changed": values_diff,
            "crd_changes": crds,
            "values": values,
            "values_reasons": reasons,
            "previous_values": _normalised(deployed_values),
            "_chart": chart,
            # a release written by helm v3 records no method; helm v4's --server-side=auto keeps it client-side
            "_apply_method": (deployed.get("apply_method") or "csa") if deployed else None,
            "_crds": target_crds,
        }

    # -- writes ------------------------------------------------------------------------------------

    def apply_crds(self, crds):
        applied = []
        for crd in crds:
            name = crd["metadata"]["name"]
            body = {k: v for k, v in crd.items() if k in ("apiVersion", "kind", "metadata", "spec")}
            body["metadata"] = {
                k: v for k, v in (crd.get("metadata") or {}).items() if k in ("name", "labels", "annotations")
            }
            try:
                self.kube.server_side_apply(
                    "%s/%s" % (CRD_PATH, name), body, FIELD_MANAGER, force=True, what="apply CRD %s" % name
                )
            except K8sError as exc:
                raise ReleaseError(
                    "applying CRD %s (server-side, before the helm upgrade) failed: %s" % (name, exc.msg)
                ) from exc
            applied.append(name)
        return applied

    def _values_file(self, values):
        fd, path = tempfile.mkstemp(prefix="values-", suffix=".yaml", dir=self.helm.tmpdir)
        with os.fdopen(fd, "w") as handle:
            yaml.safe_dump(values, handle, default_flow_style=False)
        return path

    def install_or_upgrade(self, plan):
        p = self.p
        values_file = self._values_file(plan["values"])
        try:
            self.helm.upgrade(
                p.release_name,
                p.release_namespace,
                plan["_chart"],
                plan["to_version"],
                values_file,
                wait=p.wait,
                timeout=p.timeout,
                force_conflicts=p.force_conflicts,
                create_namespace=p.create_namespace,
                apply_method=plan["_apply_method"],
            )
        except HelmError as exc:
            self._recover(plan, exc)

    def _recover(self, plan, exc):
        """After a failed helm write: roll back to the last good revision, then raise with both outcomes."""
        p = self.p
        history = self.helm.history(p.release_name, p.release_namespace)
        latest = max((h.get("revision") or 0 for h in history), default=0)
        good = [h for h in history if h.get("revision") != latest and h.get("status") in ("deployed", "superseded")]
        if not good:
            raise ReleaseError(
                "helm install of %s failed and there is no earlier revision to roll back to: %s"
                % (plan["_chart"].describe(), exc.msg),
                changed=True,
                helm_error=exc.msg,
                rolled_back=False,
            ) from exc
        revision = max(h["revision"] for h in good)
        try:
            self.helm.rollback(
                p.release_name,
                p.release_namespace,
                revision,
                wait=p.wait,
                timeout=p.timeout,
                apply_method=plan["_apply_method"],
            )
        except HelmError as rb_exc:
            raise ReleaseError(
                "helm upgrade to %s failed: %s; the rollback to revision %d failed too: %s"
                % (plan["to_version"], exc.msg, revision, rb_exc.msg),
                changed=True,
                helm_error=exc.msg,
                rollback_error=rb_exc.msg,
                rolled_back=False,
            ) from exc
        raise ReleaseError(
            "helm upgrade to %s failed and the release was rolled back to revision %d (chart %s): %s"
            % (plan["to_version"], revision, plan["from_version"], exc.msg),
            changed=True,
            helm_error=exc.msg,
            rollback_error=None,
            rolled_back=True,
            rollback_revision=revision,
        ) from exc

    # -- readiness ---------------------------------------------------------------------------------

    def readiness(self):
        """The ClusterPolicy's state and conditions and, per node, the operands that are not ready."""
        policies = self.kube.list_custom("nvidia.com", "v1", "clusterpolicies") or []
        drivers = self.kube.list_custom("nvidia.com", "v1alpha1", "nvidiadrivers")
        nodes = self.kube.list_core("nodes")
        pods = self.kube.list_core("pods", namespace=self.p.release_namespace)
        view = cluster_view(nodes, pods, policies, drivers)
        cp = view["cluster_policy"] or {}
        not_ready = {}
        for name, node in view["nodes"].items():
            bad = sorted(c for c, s in node["operands"].items() if not (s["ready"] or s["phase"] == "Succeeded"))
            if bad:
                not_ready[name] = bad
        drivers_ready = (
            all(d["ready"] for d in view["nvidia_drivers"])
            if cp.get("driver", {}).get("use_nvidia_driver_crd")
            else True
        )
        return {
            "ready": bool(cp.get("ready")) and drivers_ready,
            "state": cp.get("state"),
            "conditions": cp.get("conditions") or [],
            "nvidia_drivers": [{"name": d["name"], "state": d["state"]} for d in view["nvidia_drivers"]],
            "not_ready_operands": not_ready,
            "unscheduled_operands": [s["name"] for s in view["unscheduled_operands"]],
        }

    def wait_ready(self):
        """Poll until ready or ``ready_timeout`` seconds; return the last readiness (``waited_s`` added)."""
        start = self.clock()
        deadline = start + self.p.ready_timeout
        while True:
            state = self.readiness()
            if state["ready"] or self.clock() >= deadline:
                state["waited_s"] = round(self.clock() - start, 1)
                return state
            self.sleep(min(5.0, max(0.5, deadline - self.clock())))

    # -- entry points ------------------------------------------------------------------------------

    def present(self):
        plan = self.plan()
        result = {"changed": plan["action"] != "none", "plan": _public(plan), "values": plan["values"]}
        if self.diff:
            result["diff"] = self._diff(plan)
        if self.check_mode or plan["action"] == "none":
            result["release"] = self.deployed()
            return result
        result["crds_applied"] = self.apply_crds(plan["_crds"])
        if plan["action"] != "crds":
            self.install_or_upgrade(plan)
        result["release"] = self.deployed()
        if self.p.ready_timeout:
            ready = self.wait_ready()
            result["readiness"] = ready
            if not ready["ready"]:
                raise ReleaseError(
                    "the release is %s but ClusterPolicy is not ready after %ss (state %s): %s"
                    % (
                        plan["action"] + "ed" if plan["action"] != "crds" else "unchanged",
                        self.p.ready_timeout,
                        ready["state"],
                        _not_ready_summary(ready),
                    ),
                    **result,
                )
        return result

    def _diff(self, plan):
        p = self.p
        before_manifest = ""
        if plan["from_version"]:
            before_manifest = self.helm.get_manifest(p.release_name, p.release_namespace)
        after_manifest = self.helm.template(
            p.release_name, p.release_namespace, plan["_chart"], plan["to_version"], self._values_file(plan["values"])
        )
        return [
            {
                "before_header": "values (%s)" % (plan["from_version"] or "not installed"),
                "after_header": "values (%s)" % plan["to_version"],
                "before": yaml.safe_dump(plan["previous_values"], default_flow_style=False)
                if plan["from_version"]
                else "",
                "after": yaml.safe_dump(plan["values"], default_flow_style=False),
            },
            {
                "before_header": "manifests (%s)" % (plan["from_version"] or "not installed"),
                "after_header": "manifests (%s)" % plan["to_version"],
                "before": before_manifest,
                "after": after_manifest,
            },
        ]

    def absent(self):
        p = self.p
        deployed = self.deployed()
        crds = self._removable_crds() if p.remove_crds else []
        result = {
            "changed": bool(deployed) or bool(crds),
            "plan": {
                "action": "uninstall" if deployed else "none",
                "from_version": deployed and deployed["chart_version"],
            },
            "release": deployed,
            "crds_removed": crds,
        }
        if self.diff:
            result["diff"] = {
                "before": yaml.safe_dump({"release": deployed, "crds": crds}) if deployed or crds else "",
                "after": "",
            }
        if self.check_mode or not result["changed"]:
            return result
        if deployed:
            self.helm.uninstall(p.release_name, p.release_namespace, wait=p.wait, timeout=p.timeout)
        for name in crds:
            try:
                self.kube.delete_path("%s/%s" % (CRD_PATH, name), what="delete CRD %s" % name)
            except K8sError as exc:
                raise ReleaseError("the release was removed but deleting CRD %s failed: %s" % (name, exc.msg)) from exc
        return result

    def _removable_crds(self):
        names = list(OPERATOR_CRDS)
        if self.p.chart_ref:
            chart = self.p.chart()
            names = [c["metadata"]["name"] for c in self.helm.show_crds(chart, self.p.chart_version)]
        return sorted(self.live_crds(names))

    def run(self):
        return self.present() if self.p.state == "present" else self.absent()


def _public(plan):
    return {k: v for k, v in plan.items() if not k.startswith("_") and k not in ("values", "previous_values")}


def _not_ready_summary(ready):
    parts = []
    for cond in ready["conditions"]:
        if cond.get("status") != "True" or cond.get("type") == "Error":
            parts.append(
                "%s=%s (%s: %s)" % (cond.get("type"), cond.get("status"), cond.get("reason"), cond.get("message"))
            )
    for node, operands in sorted(ready["not_ready_operands"].items()):
        parts.append("%s: %s not ready" % (node, ", ".join(operands)))
    if ready["unscheduled_operands"]:
        parts.append("unscheduled: %s" % ", ".join(ready["unscheduled_operands"]))
    return "; ".join(parts) or "no conditions reported (is the operator running?)"
