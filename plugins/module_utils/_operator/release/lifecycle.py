# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""One run of the ``gpu_operator`` module: plan (check mode) with the chart rendered once, CRDs by server-side apply
before any install or upgrade, one ``helm upgrade --install``, recovery by what helm wrote, bounded ClusterPolicy
readiness wait, uninstall.

Idempotence: nothing is written when the deployed chart version and its user-supplied values (``helm get values``)
equal the target version and the effective values, and the CRDs already match.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import tempfile
import time

try:
    import yaml
except ImportError:  # pragma: no cover - PyYAML ships with ansible-core
    yaml = None

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.helm import HelmError, ReleaseSpec
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.k8s import api_resources, helm_api_versions
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import labels_of, name_of
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.release.crds import (
    CRD_PATH,
    OPERATOR_CRDS,
    apply_crds,
    crd_changes,
    delete_crds,
    live_crds,
    lost_fields,
    other_owner,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.release.diffs import (
    absent_diff,
    normalised,
    present_diff,
    value_changes,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.release.errors import ReleaseError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.release.gates import (
    crd_gate,
    lost_fields_summary,
    operator_version,
    repo_majors,
    version_gate,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.release.leftovers import (
    release_objects,
    remaining,
    uninstall_failed,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.release.modes import (
    STATE_KIND,
    check_gpucluster_values,
    check_selected_mode,
    gate_mode,
    release_mode,
    with_mode_values,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.release.readiness import (
    not_ready_summary,
    wait_ready,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.release.recovery import Recovery
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.values import (
    NFD_LABEL_PREFIX,
    SERVICE_MONITOR_CRD,
    ValuesError,
    deep_merge,
    effective_values,
)

#: What a written release is, per plan action, in the not-ready message.
DONE = {"install": "installed", "upgrade": "upgraded", "update": "updated", "crds": "unchanged", "none": "unchanged"}


class OperatorRelease:
    """One run of the module with ``params`` (a :class:`.params.ReleaseParams`, check and diff mode included):
    ``helm`` a ``_clients.helm.Helm``, ``kube`` a ``_clients.k8s.K8sClient``; ``warnings``
    collects what the module passes to ``module.warn`` (never a result key)."""

    def __init__(self, params, helm, kube, sleep=time.sleep, clock=time.monotonic):
        self.p = params
        self.helm = helm
        self.kube = kube
        self.check_mode = params.check_mode
        self.diff = params.diff
        self.sleep = sleep
        self.clock = clock
        self.warnings = []
        self._served = None

    # -- reads -------------------------------------------------------------------------------------

    def deployed(self):
        return self.helm.release(self.p.release_name, self.p.release_namespace)

    def served(self):
        """Every resource the API server serves (API discovery, read once per run)."""
        if self._served is None:
            self._served = api_resources(self.kube)
        return self._served

    def cluster_facts(self):
        """``nfd_labels`` and ``service_monitor_crd`` from two requests (paginated node LIST, one CRD GET)."""
        if not self.p.detect:
            return {}
        nodes = self.kube.list_core("nodes")
        nfd = any(k.startswith(NFD_LABEL_PREFIX) for n in nodes for k in labels_of(n))
        crd = self.kube.get_or_none("%s/%s" % (CRD_PATH, SERVICE_MONITOR_CRD), what="read the ServiceMonitor CRD")
        return {"nfd_labels": nfd, "service_monitor_crd": crd is not None}

    def _values(self, chart, version, deployed_values):
        """``(effective values, reasons, chart defaults)`` for chart ``version``. The values that select the mode (the
        asked one, else the installed release's) come with the fleet's, below the user's values, which must agree."""
        defaults = self.helm.show_values(chart, version)
        user = self.p.user_values()
        mode = self.p.mode
        if mode is None and deployed_values is not None:
            mode = release_mode(deep_merge(defaults, deployed_values))
        try:
            values, reasons = effective_values(
                defaults,
                user,
                with_mode_values(self.p.fleet, mode, defaults, version, user),
                self.cluster_facts(),
                deployed_values,
            )
        except ValuesError as exc:
            raise ReleaseError(str(exc)) from exc
        check_selected_mode(mode, deep_merge(defaults, values))
        check_gpucluster_values(deep_merge(defaults, values))
        return normalised(values), reasons, defaults

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
            reason = version_gate(current, target, repo_majors(self.helm, chart), force=p.force)
            if reason:
                raise ReleaseError(reason, refused=True, from_version=current, to_version=target)
            elif operator_version(target) < operator_version(current):
                self.warnings.append("downgrading %s -> %s because force is set" % (current, target))
        deployed_values = self.helm.get_values(p.release_name, p.release_namespace) if deployed else None
        values, reasons, defaults = self._values(chart, target, deployed_values)
        mode = release_mode(deep_merge(defaults, values))
        deployed_mode = release_mode(deep_merge(defaults, deployed_values or {})) if deployed else None
        served = self.served() if mode == "gpucluster" else None  # the DeviceClass API, where it matters
        self.warnings.extend(gate_mode(self.kube, mode, deployed_mode, self.p.fleet, served))
        target_crds, skipped = self.helm.chart_crds(chart, target, deep_merge(defaults, values))
        crds = crd_changes(target_crds, live_crds(self.kube, [name_of(c) for c in target_crds]))
        self._crd_gate(crds, target)
        values_diff = value_changes(normalised(deployed_values), values) if deployed else []
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
        plan = {
            "action": action,
            "chart": chart.describe(),
            "from_version": current,
            "to_version": target,
            "mode": mode,
            "app_version": meta.get("appVersion"),
            "release_status": deployed.get("status") if deployed else None,
            "values_changed": values_diff,
            "crd_changes": crds,
            "crds_skipped": skipped,
            "values": values,
            "values_reasons": reasons,
            "previous_values": normalised(deployed_values or {}),
            "_chart": chart,
            "_deployed": deployed,
            # a release written by helm v3 records no method; helm v4's --server-side=auto keeps it client-side
            "_apply_method": (deployed.get("apply_method") or "csa") if deployed else None,
            "_crds": target_crds,
        }
        plan["_manifest"] = self._render(plan) if action not in ("none", "crds") else None
        return plan

    def _crd_gate(self, crds, target):
        lost = lost_fields(crds)
        reason = crd_gate(lost, target, force=self.p.force)
        if reason:
            raise ReleaseError(reason, refused=True, to_version=target, crd_changes=crds)
        if lost:
            self.warnings.append(
                "applying the CRDs of chart %s drops %d field(s) from the live CRDs because force is set: %s"
                % ((target,) + lost_fields_summary(lost))
            )

    def _render(self, plan):
        """The manifest helm renders (``helm template``): the chart's ``fail`` checks, its values schema and every
        template run here, so such a failure stops the run before anything is written, check mode included. The
        chart sees the cluster's API versions and Kubernetes version in ``.Capabilities``, as on an install."""
        try:
            return self.helm.template(
                self._spec(plan),
                api_versions=helm_api_versions(self.served()),
                kube_version=self.kube.version()["git_version"],
            )
        except HelmError as exc:
            deployed = plan["_deployed"]
            state = (
                "revision %s (chart %s) is still deployed" % (deployed["revision"], deployed["chart_version"])
                if deployed
                else "the release is not installed"
            )
            raise ReleaseError(
                "chart %s does not render with these values, so helm would write no revision; nothing was changed "
                "and %s: %s" % (plan["to_version"], state, exc.msg),
                changed=False,
                helm_error=exc.msg,
                revision_written=False,
                rolled_back=False,
                plan=_public(plan),
            ) from exc

    # -- writes ------------------------------------------------------------------------------------

    def _spec(self, plan):
        """The release and chart of ``plan`` for helm, its values in a new file."""
        fd, path = tempfile.mkstemp(prefix="values-", suffix=".yaml", dir=self.helm.tmpdir)
        with os.fdopen(fd, "w") as handle:
            yaml.safe_dump(plan["values"], handle, default_flow_style=False)
        return ReleaseSpec(self.p.release_name, self.p.release_namespace, plan["_chart"], plan["to_version"], path)

    def install_or_upgrade(self, plan):
        p = self.p
        before = self.helm.history(p.release_name, p.release_namespace)
        try:
            self.helm.upgrade(
                self._spec(plan),
                wait=p.wait,
                timeout=p.timeout,
                force_conflicts=p.force_conflicts,
                create_namespace=p.create_namespace,
                apply_method=plan["_apply_method"],
            )
        except HelmError as exc:
            Recovery(self.helm, p, plan, before).fail(exc)

    # -- entry points ------------------------------------------------------------------------------

    def present(self):
        plan = self.plan()
        result = {"changed": plan["action"] != "none", "plan": _public(plan), "values": plan["values"]}
        if self.diff:
            result["diff"] = self._diff(plan)
        if self.check_mode:
            result["release"] = plan["_deployed"]
            return result
        if plan["action"] == "none":
            result["release"] = plan["_deployed"]
        else:
            result["crds_applied"] = apply_crds(self.kube, plan["_crds"])
            if plan["action"] != "crds":
                self.install_or_upgrade(plan)
            result["release"] = self.deployed()
        # a rerun at the target checks readiness too: an operator that had not caught up fails this run as well
        if self.p.ready_timeout:
            kind = STATE_KIND[plan["mode"]]
            ready = wait_ready(
                self.kube, self.p.release_namespace, self.p.ready_timeout, self.sleep, self.clock, kind=kind
            )
            result["readiness"] = ready
            if not ready["ready"]:
                raise ReleaseError(
                    "the release is %s but %s is not ready after %ss (state %s): %s"
                    % (
                        DONE[plan["action"]],
                        kind,
                        self.p.ready_timeout,
                        ready["state"],
                        not_ready_summary(ready),
                    ),
                    **result,
                )
        return result

    def _diff(self, plan):
        p = self.p
        before_manifest = ""
        if plan["from_version"]:
            before_manifest = self.helm.get_manifest(p.release_name, p.release_namespace)
        after_manifest = plan["_manifest"]
        if after_manifest is None:
            after_manifest = self._render(plan)
        return present_diff(plan, before_manifest, after_manifest)

    def absent(self):
        p = self.p
        deployed = self.deployed()
        crds, left = self._removable_crds(deployed) if p.remove_crds else ([], [])
        result = {
            "changed": bool(deployed) or bool(crds),
            "plan": {
                "action": "uninstall" if deployed else "none",
                "from_version": deployed and deployed["chart_version"],
            },
            "release": deployed,
            "crds_removed": crds,
            "crds_left": left,
        }
        if left:
            self.warnings.append(
                "remove_crds left these CRDs alone: %s" % "; ".join("%s (%s)" % (c["name"], c["reason"]) for c in left)
            )
        if self.diff:
            result["diff"] = absent_diff(deployed, crds)
        if self.check_mode or not result["changed"]:
            return result
        if deployed:
            objects = release_objects(self.helm, p.release_name, p.release_namespace)
            try:
                self.helm.uninstall(p.release_name, p.release_namespace, wait=p.wait, timeout=p.timeout)
            except HelmError as exc:
                after = self.deployed()
                left = remaining(self.kube, self.served(), objects)
                uninstall_failed(exc, objects, left, deployed, after, result)
        delete_crds(self.kube, crds)
        return result

    def _removable_crds(self, deployed):
        """``(names to delete, [{name, reason}] left alone)``: the live CRDs of the charts and subcharts this release
        renders (its deployed values, or the values a ``present`` run would use) that no other owner manages."""
        p = self.p
        skipped = []
        if p.chart_ref:
            chart = p.chart()
            version = deployed["chart_version"] if deployed else p.chart_version
            if deployed:
                values = self.helm.get_values(p.release_name, p.release_namespace, computed=True)
            else:
                values, _reasons, defaults = self._values(chart, version, None)
                values = deep_merge(defaults, values)
            crds, skipped = self.helm.chart_crds(chart, version, values)
            names = [name_of(c) for c in crds]
        else:
            names = list(OPERATOR_CRDS)
        live = live_crds(self.kube, names + [s["name"] for s in skipped])
        left = [{"name": s["name"], "reason": s["reason"]} for s in skipped if s["name"] in live]
        remove = []
        for name in sorted(set(names) & set(live)):
            owner = other_owner(live[name], p.release_name, p.release_namespace)
            if owner:
                left.append({"name": name, "reason": "another owner manages it: %s" % owner})
            else:
                remove.append(name)
        return remove, sorted(left, key=lambda c: c["name"])

    def run(self):
        return self.present() if self.p.state == "present" else self.absent()


def _public(plan):
    return {k: v for k, v in plan.items() if not k.startswith("_") and k not in ("values", "previous_values")}
