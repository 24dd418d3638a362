# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Cluster-side steps of the canary upgrade (module ``gpu_canary_upgrade``), over ``_k8s.K8sClient``.

Every write goes through :meth:`Canary._write`, which records a human-readable change and does nothing in check
mode. Reads are a few paginated LISTs per step or poll, never one GET per node.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time
from urllib.parse import quote

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.cluster_view import (
    UPGRADE_SKIP_LABEL,
    UPGRADE_STATE_LABEL,
    node_view,
    operands_by_node,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.k8s import K8sError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.errors import GpuOpsError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary import plan as P

MERGE = "application/merge-patch+json"
FIELD_MANAGER = "gpuops-canary-upgrade"
POOL_LABEL = "gpuops.io/pool"


class CanaryAbort(GpuOpsError):
    """A wave failed; the cluster is left as the abort leaves it (see :meth:`Canary.abort`)."""

    def __init__(self, msg, wave=None, failed=None):
        super(CanaryAbort, self).__init__(msg)
        self.wave = wave
        self.failed = failed or {}

    def result(self):
        out = super(CanaryAbort, self).result()
        out.update(failed_nodes=self.failed, wave=self.wave)
        return out


def utc_now(clock=time.time):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(clock()))


class Canary:
    def __init__(
        self,
        client,
        namespace="gpu-operator",
        configmap="gpuops-canary-upgrade",
        taint_key=P.DEFAULT_TAINT_KEY,
        taint_effect="NoSchedule",
        check_mode=False,
        clock=time.time,
        sleep=time.sleep,
        poll=2.0,
        page_size=2000,
    ):
        self.client = client
        self.ns = namespace
        self.cm_name = configmap
        self.taint_key = taint_key
        self.taint_effect = taint_effect
        self.check_mode = check_mode
        self.clock = clock
        self.sleep = sleep
        self.poll = poll
        self.page_size = page_size
        self.changes = []
        self._stored = None

    # ------------------------------------------------------------------------------------------ reads
    def nodes(self):
        return self.client.list_core("nodes", page_size=self.page_size)

    def operator_pods(self):
        return self.client.list_core("pods", namespace=self.ns, page_size=self.page_size)

    def all_pods(self):
        return self.client.list_core("pods", page_size=self.page_size)

    def pdbs(self):
        return self.client.list_all(
            "/apis/policy/v1/poddisruptionbudgets", page_size=self.page_size, what="list poddisruptionbudgets"
        )[0]

    def node_events(self):
        return self.client.list_core(
            "events", namespace="default", field_selector="involvedObject.kind=Node", page_size=self.page_size
        )

    def cluster_policy(self):
        items = self.client.list_custom("nvidia.com", "v1", "clusterpolicies", page_size=self.page_size) or []
        items = sorted(items, key=lambda o: (o.get("metadata") or {}).get("creationTimestamp") or "")
        return items[0] if items else None

    def nvidia_drivers(self):
        return self.client.list_custom("nvidia.com", "v1alpha1", "nvidiadrivers", page_size=self.page_size) or []

    def nfd_daemonsets(self):
        return self.client.list_all(
            "/apis/apps/v1/namespaces/%s/daemonsets" % quote(self.ns, safe=""),
            label_selector="app.kubernetes.io/name=node-feature-discovery",
            page_size=self.page_size,
            what="list NFD DaemonSets in %s" % self.ns,
        )[0]

    def cm_path(self):
        return "/api/v1/namespaces/%s/configmaps/%s" % (quote(self.ns, safe=""), quote(self.cm_name, safe=""))

    def read_record(self):
        record = P.decode_record(self.client.get_or_none(self.cm_path(), what="read ConfigMap %s" % self.cm_name))
        self._stored = self._content(record)
        return record

    @staticmethod
    def _content(record):
        return None if record is None else P.encode_record(dict(record, updated=None))

    # ------------------------------------------------------------------------------------------ writes
    def _write(self, change, method, path, body, content_type=MERGE, query=None):
        self.changes.append(change)
        if self.check_mode:
            return None
        return self.client.send_typed(method, path, body, query=query, content_type=content_type, what=change)

    def save_record(self, record):
        """Write the record when its content changed (so a repeated step changes nothing)."""
        if self._content(record) == self._stored:
            return
        self._stored = self._content(record)
        record["updated"] = utc_now(self.clock)
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": self.cm_name,
                "namespace": self.ns,
                "labels": {"app.kubernetes.io/managed-by": "gpuops.gpu_operator"},
            },
            "data": {P.RECORD_KEY: P.encode_record(record)},
        }
        self._write(
            "save the progress record in ConfigMap %s/%s (phase %s)" % (self.ns, self.cm_name, record.get("phase")),
            "PATCH",
            self.cm_path(),
            body,
            content_type="application/apply-patch+yaml",
            query={"fieldManager": FIELD_MANAGER, "force": "true"},
        )

    @staticmethod
    def node_path(name):
        return "/api/v1/nodes/%s" % quote(name, safe="")

    def label_node(self, node, labels, why):
        return self._patch_metadata(node, "labels", P.labels_of(node), labels, why)

    def annotate_node(self, node, annotations, why):
        return self._patch_metadata(node, "annotations", P.annotations_of(node), annotations, why)

    def _patch_metadata(self, node, field, have, values, why):
        """PATCH the ``field`` (labels or annotations) entries of ``values`` the node does not have; True if any."""
        want = {k: v for k, v in values.items() if have.get(k) != v}
        if not want:
            return False
        self._write(
            "node %s: %s" % (P.name_of(node), why),
            "PATCH",
            self.node_path(P.name_of(node)),
            {"metadata": {field: want}},
        )
        return True

    def _set_taints(self, node, add, value=None):
        """Add (``add``) or remove the canary taint; re-reads and retries once on a conflict."""
        for attempt in (1, 2):
            spec = node.get("spec") or {}
            if add:
                taints, changed = P.taints_with(spec.get("taints"), self.taint_key, self.taint_effect, value)
            else:
                taints, changed = P.taints_without(spec.get("taints"), self.taint_key, self.taint_effect)
            if not changed:
                return False
            body = {
                "metadata": {"resourceVersion": (node.get("metadata") or {}).get("resourceVersion")},
                "spec": {"taints": taints or None},
            }
            why = "%s taint %s:%s" % ("add" if add else "remove", self.taint_key, self.taint_effect)
            try:
                self._write("node %s: %s" % (P.name_of(node), why), "PATCH", self.node_path(P.name_of(node)), body)
                return True
            except K8sError as exc:
                if exc.status != 409 or attempt == 2:
                    raise
                self.changes.pop()
                node = self.client.get(self.node_path(P.name_of(node)), what="read node %s" % P.name_of(node))
        return False

    def taint(self, node, value):
        return self._set_taints(node, True, value)

    def untaint(self, node):
        return self._set_taints(node, False)

    # ------------------------------------------------------------------------------------------ plan
    def target_and_source(self, driver_version, chart_version, cp):
        spec = (cp or {}).get("spec") or {}
        chart = P.labels_of(cp or {}).get("helm.sh/chart", "")
        source = {
            "driver_version": (spec.get("driver") or {}).get("version") or None,
            "chart_version": chart.rsplit("-", 1)[-1] if "-v" in chart else None,
        }
        target = {"driver_version": driver_version or None, "chart_version": chart_version or None}
        return target, source

    def select(self, nodes, canary_nodes, canary_selector, exclude=()):
        """``(canary, rest, excluded)`` node names among the GPU nodes."""
        gpu = {P.name_of(n): n for n in nodes if P.is_gpu_node(n)}
        excluded = sorted(
            n for n, node in gpu.items() if n in set(exclude) or P.labels_of(node).get(UPGRADE_SKIP_LABEL) == "true"
        )
        movable = [n for n in gpu if n not in excluded]
        if canary_nodes:
            unknown = sorted(set(canary_nodes) - set(gpu))
            if unknown:
                raise P.PlanError(
                    "canary node(s) %s are not GPU nodes of this cluster; check the canary group's k8s node names"
                    % ", ".join(unknown)
                )
            canary = [n for n in sorted(set(canary_nodes), key=P.natural_key) if n in movable]
        else:
            terms = P.parse_selector(canary_selector)
            canary = sorted((n for n in movable if P.selector_matches(P.labels_of(gpu[n]), terms)), key=P.natural_key)
        if not canary:
            raise P.PlanError(
                "the canary pool is empty (canary_nodes %s, canary_selector %r, excluded %s); name at least one "
                "GPU node that is not skipped" % (list(canary_nodes or []), canary_selector, excluded)
            )
        pools = {n: P.labels_of(gpu[n]).get(POOL_LABEL) for n in movable}
        rest = P.interleave_pools([n for n in movable if n not in canary], pools.get)
        return canary, rest, excluded

    def plan(
        self,
        driver_version,
        chart_version,
        canary_nodes,
        canary_selector,
        waves,
        exclude=(),
        wait_selector="",
        cuda_images=(),
    ):
        """Read the cluster and the record; returns the plan (what every step will do) with the gate."""
        cuda_rules = P.cuda_image_rules(cuda_images)
        nodes = self.nodes()
        cp = self.cluster_policy()
        if cp is None:
            raise P.PlanError(
                "no ClusterPolicy in the cluster: install the GPU Operator first (gpu_operator_install role)"
            )
        target, source = self.target_and_source(driver_version, chart_version, cp)
        if not target["driver_version"] and not target["chart_version"]:
            raise P.PlanError("nothing to upgrade: set driver_version, chart_version or both")
        record = self.read_record()
        resumed = P.same_target(record, target) and record.get("phase") in ("in-progress", "aborted", "done")
        if record and not resumed and record.get("phase") in ("in-progress", "aborted"):
            raise P.PlanError(
                "ConfigMap %s/%s holds an unfinished canary upgrade to %s (phase %s); finish it, roll it back "
                "(rollback=true) or delete the ConfigMap before starting one to %s"
                % (self.ns, self.cm_name, record.get("target"), record.get("phase"), target)
            )
        if resumed:
            source = record.get("from") or source
            waves_plan = [{"index": w["index"], "name": w["name"], "nodes": w["nodes"]} for w in record["waves"]]
            unplanned, excluded = record.get("unplanned") or [], record.get("excluded") or []
        else:
            canary, rest, excluded = self.select(nodes, canary_nodes, canary_selector, exclude)
            waves_plan, unplanned = P.plan_waves(canary, rest, waves)
            record = P.new_record(
                target,
                source,
                {"key": self.taint_key, "effect": self.taint_effect},
                waves_plan,
                unplanned,
                excluded,
                utc_now(self.clock),
            )
        planned = [n for w in waves_plan for n in w["nodes"]]
        dsspec = (cp.get("spec") or {}).get("daemonsets") or {}
        tolerations = {
            "daemonsets": P.with_toleration(dsspec.get("tolerations"), self.taint_key, self.taint_effect)[0],
            "nfd_worker": [
                P.with_toleration(
                    (((ds.get("spec") or {}).get("template") or {}).get("spec") or {}).get("tolerations"),
                    self.taint_key,
                    self.taint_effect,
                )[0]
                for ds in self.nfd_daemonsets()
                if P.labels_of(ds).get("role") == "worker"
            ][:1],
        }
        tolerations["nfd_worker"] = tolerations["nfd_worker"][0] if tolerations["nfd_worker"] else []
        gate = P.gate(
            nodes,
            self.all_pods(),
            self.pdbs(),
            planned,
            record,
            self.taint_key,
            wait_selector,
            target_driver=target["driver_version"],
            cuda_rules=cuda_rules,
        )
        status = {w["index"]: w.get("status", P.WAVE_PENDING) for w in record["waves"]}
        plan = {
            "resumed": bool(resumed),
            "phase": record.get("phase"),
            "target": target,
            "from": source,
            "mode": "nvidiadriver"
            if ((cp.get("spec") or {}).get("driver") or {}).get("useNvidiaDriverCRD")
            else "clusterpolicy",
            "taint": {"key": self.taint_key, "effect": self.taint_effect},
            "skip_label": UPGRADE_SKIP_LABEL,
            "waves": [
                dict(
                    w,
                    status=status.get(w["index"], P.WAVE_PENDING),
                    taint="%s=%s:%s" % (self.taint_key, w["name"], self.taint_effect),
                )
                for w in waves_plan
            ],
            "next_wave": P.next_wave(record),
            "unplanned": unplanned,
            "excluded": excluded,
            "nodes": len(planned),
            "gate": gate,
            "record": "%s/%s" % (self.ns, self.cm_name),
            "tolerations": tolerations,
        }
        return plan, record, nodes, cp

    # ------------------------------------------------------------------------------------------ prepare
    def ensure_tolerations(self, cp, hold_operands=False):
        """Every operand (ClusterPolicy ``daemonsets.tolerations``) and the NFD worker tolerate the canary taint.

        With ``hold_operands`` the operand DaemonSets also switch to ``OnDelete`` in the same patch, so that neither
        the new toleration nor a chart upgrade restarts operands on nodes outside the current wave
        (:meth:`roll_operands` renews them wave by wave)."""
        changed = False
        dsspec = (cp.get("spec") or {}).get("daemonsets") or {}
        tols, need = P.with_toleration(dsspec.get("tolerations"), self.taint_key, self.taint_effect)
        patch = {"tolerations": tols} if need else {}
        if hold_operands and dsspec.get("updateStrategy") != "OnDelete":
            patch["updateStrategy"] = "OnDelete"
        if patch:
            self._write(
                "ClusterPolicy %s: set spec.daemonsets %s"
                % (
                    P.name_of(cp),
                    " and ".join(
                        ("toleration %s:%s" % (self.taint_key, self.taint_effect))
                        if k == "tolerations"
                        else "updateStrategy=OnDelete"
                        for k in sorted(patch)
                    ),
                ),
                "PATCH",
                "/apis/nvidia.com/v1/clusterpolicies/%s" % quote(P.name_of(cp), safe=""),
                {"spec": {"daemonsets": patch}},
            )
            changed = True
        for ds in self.nfd_daemonsets():
            pod_spec = ((ds.get("spec") or {}).get("template") or {}).get("spec") or {}
            tols, need = P.with_toleration(pod_spec.get("tolerations"), self.taint_key, self.taint_effect)
            if need:
                self._write(
                    "DaemonSet %s/%s: add toleration %s:%s"
                    % (self.ns, P.name_of(ds), self.taint_key, self.taint_effect),
                    "PATCH",
                    "/apis/apps/v1/namespaces/%s/daemonsets/%s"
                    % (quote(self.ns, safe=""), quote(P.name_of(ds), safe="")),
                    {"spec": {"template": {"spec": {"tolerations": tols}}}},
                )
                changed = True
        return changed

    def set_driver_version(self, cp, version, policy):
        """Point the ClusterPolicy (or every NVIDIADriver in CRD mode) at ``version`` with ``policy`` merged in."""
        spec = cp.get("spec") or {}
        driver = spec.get("driver") or {}
        changed = False
        cp_patch = {}
        if not driver.get("useNvidiaDriverCRD") and version and driver.get("version") != version:
            cp_patch["version"] = version
        have_policy = driver.get("upgradePolicy") or {}
        want_policy = {k: v for k, v in (policy or {}).items() if have_policy.get(k) != v}
        if want_policy:
            cp_patch["upgradePolicy"] = want_policy
        if cp_patch:
            self._write(
                "ClusterPolicy %s: set spec.driver %s"
                % (P.name_of(cp), ", ".join("%s=%s" % kv for kv in sorted(cp_patch.items()))),
                "PATCH",
                "/apis/nvidia.com/v1/clusterpolicies/%s" % quote(P.name_of(cp), safe=""),
                {"spec": {"driver": cp_patch}},
            )
            changed = True
        if driver.get("useNvidiaDriverCRD") and version:
            for nvd in self.nvidia_drivers():
                if ((nvd.get("spec") or {}).get("version")) != version:
                    self._write(
                        "NVIDIADriver %s: set spec.version=%s" % (P.name_of(nvd), version),
                        "PATCH",
                        "/apis/nvidia.com/v1alpha1/nvidiadrivers/%s" % quote(P.name_of(nvd), safe=""),
                        {"spec": {"version": version}},
                    )
                    changed = True
        return changed

    def prepare(self, record, nodes, cp, policy, hold_operands=False):
        """Tolerations first, then the skip label on every node that is not proven, then the target version.

        Nothing moves after this: the operator's upgrade controller leaves skip-labelled nodes in upgrade-required.
        """
        if hold_operands and "operand_strategy" not in record:
            record["operand_strategy"] = ((cp.get("spec") or {}).get("daemonsets") or {}).get("updateStrategy")
        self.ensure_tolerations(cp, hold_operands)
        proven = {n for w in record["waves"] if w.get("status") == P.WAVE_PROVEN for n in w["nodes"]}
        hold = [n for w in record["waves"] for n in w["nodes"] if n not in proven] + list(record.get("unplanned") or [])
        by_name = {P.name_of(n): n for n in nodes}
        labelled = set(record.get("skip_labelled") or [])
        for n in hold:
            node = by_name.get(n)
            if node is None:
                continue
            if self.label_node(node, {UPGRADE_SKIP_LABEL: "true"}, "hold the upgrade (skip label)"):
                labelled.add(n)
        record["skip_labelled"] = sorted(labelled)
        self.save_record(record)
        self.set_driver_version(cp, (record.get("target") or {}).get("driver_version"), policy)
        return record

    # ------------------------------------------------------------------------------------------ waves
    def _wave(self, record, index):
        for wave in record["waves"]:
            if wave["index"] == index:
                return wave
        raise P.PlanError(
            "wave %r is not in the plan (waves 0..%d); run the plan step first" % (index, len(record["waves"]) - 1)
        )

    def _by_name(self):
        return {P.name_of(n): n for n in self.nodes()}

    def _wait(self, deadline, what, check):
        """Poll ``check()`` (returns ``(done, detail)``) until done or ``deadline``; returns ``(done, detail)``."""
        while True:
            done, detail = check()
            if done or self.clock() >= deadline:
                return done, detail
            self.sleep(self.poll)

    def handle_workloads(self, wave, policy, wait_selector, timeout):
        """Wait for the waitForCompletion pods, then evict (``evict``), wait for (``wait``) or leave (``none``) the
        other GPU pods of the wave's nodes. Eviction goes through the Eviction API, so PodDisruptionBudgets hold."""
        members = set(wave["nodes"])
        terms = P.parse_selector(wait_selector)
        deadline = self.clock() + timeout
        evicted = []

        def check():
            pods = P.active_gpu_pods(self.all_pods(), members)
            waiting = [p for p in pods if terms and P.selector_matches(P.labels_of(p), terms)]
            others = [p for p in pods if p not in waiting]
            if policy == "wait":
                waiting = pods
                others = []
            blocked = []
            if policy == "evict":
                for pod in others:
                    ref = P.pod_ref(pod)
                    if self._evict(pod):
                        if ref not in evicted:
                            evicted.append(ref)
                    else:
                        blocked.append(ref)
            still = [P.pod_ref(p) for p in waiting] + blocked
            return not still, still

        if policy == "none" and not terms:
            return evicted
        if self.check_mode:
            check()  # records the evictions it would make
            return evicted
        done, still = self._wait(deadline, "GPU workloads", check)
        if not done:
            raise CanaryAbort(
                "GPU workloads on %s did not finish or could not be evicted within %ds: %s (a PodDisruptionBudget "
                "allows no disruption, or a waitForCompletion job is still running); raise eviction_timeout or "
                "move them" % (wave["name"], timeout, ", ".join(still)),
                wave=wave["index"],
            )
        return evicted

    def _evict(self, pod):
        """POST an Eviction; False when a PodDisruptionBudget refuses it (HTTP 429)."""
        md = pod.get("metadata") or {}
        path = "/api/v1/namespaces/%s/pods/%s/eviction" % (quote(md["namespace"], safe=""), quote(md["name"], safe=""))
        body = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": md["name"], "namespace": md["namespace"]},
        }
        change = "evict pod %s/%s from node %s" % (md["namespace"], md["name"], (pod.get("spec") or {}).get("nodeName"))
        try:
            self.changes.append(change)
            if not self.check_mode:
                self.client.send("POST", path, body=body, what=change, accept_statuses=(404,))
            return True
        except K8sError as exc:
            self.changes.pop()
            if exc.status == 429:
                return False
            raise

    def run_wave(self, record, index, opts):
        """Upgrade one wave through the operator's upgrade controller and prove it on the cluster side.

        ``opts``: driver_version, policy (eviction), wait_selector, eviction_timeout, wave_timeout, proof_timeout,
        dcgm_url, fetch (callable url -> text, for DCGM). Raises :class:`CanaryAbort` after aborting.
        """
        wave = self._wave(record, index)
        if wave.get("status") == P.WAVE_PROVEN:
            return {"wave": wave, "nodes": {}, "skipped": True}
        now = utc_now(self.clock)
        wave["status"] = P.WAVE_UPGRADING
        wave["started"] = wave.get("started") or now
        wave["reason"] = None
        record["phase"] = "in-progress"
        record["reason"] = None
        self.save_record(record)
        by_name = self._by_name()
        members = [n for n in wave["nodes"] if n in by_name]
        for n in members:
            self.taint(by_name[n], wave["name"])
        # a node this run left failed is retried (the operator's documented retry: relabel upgrade-required)
        for n in members:
            node = by_name[n]
            if P.FAILED_ANNOTATION in P.annotations_of(node):
                self.annotate_node(node, {P.FAILED_ANNOTATION: None}, "clear the earlier failure (retry)")
                if P.labels_of(node).get(UPGRADE_STATE_LABEL) == "upgrade-failed":
                    self.label_node(node, {UPGRADE_STATE_LABEL: "upgrade-required"}, "retry the driver upgrade")
        try:
            evicted = self.handle_workloads(
                wave, opts.get("policy", "evict"), opts.get("wait_selector") or "", opts.get("eviction_timeout", 600)
            )
        except CanaryAbort as exc:
            self.abort(record, index, dict.fromkeys(members, exc.msg), exc.msg)
            raise
        for n in members:
            self.label_node(by_name[n], {UPGRADE_SKIP_LABEL: None}, "release the driver upgrade (remove skip label)")
        if self.check_mode:
            return {"wave": wave, "nodes": {}, "evicted": evicted, "upgrade": {}, "skipped": False}
        target = opts.get("driver_version") or (record.get("target") or {}).get("driver_version")
        failed, results = self.wait_upgraded(members, target, opts.get("wave_timeout", 1800))
        if failed:
            msg = "%s failed: %s" % (wave["name"], "; ".join("%s: %s" % kv for kv in sorted(failed.items())))
            self.abort(record, index, failed, msg)
            raise CanaryAbort(msg, wave=index, failed=failed)
        rolled = self.roll_operands(members)
        failed, proof = self.prove(members, target, wave["started"], opts)
        if failed:
            msg = "%s failed its proof: %s" % (wave["name"], "; ".join("%s: %s" % kv for kv in sorted(failed.items())))
            self.abort(record, index, failed, msg)
            raise CanaryAbort(msg, wave=index, failed=failed)
        wave["status"] = P.WAVE_UPGRADED
        self.save_record(record)
        return {
            "wave": wave,
            "nodes": proof,
            "evicted": evicted,
            "operands_renewed": rolled,
            "upgrade": results,
            "skipped": False,
        }

    def roll_operands(self, members):
        """Delete the operand pods on ``members`` whose images differ from their ``OnDelete`` DaemonSet's template
        (the driver excepted: the upgrade controller renews it); the DaemonSet controller recreates them."""
        members = set(members)
        dss = self.client.list_all(
            "/apis/apps/v1/namespaces/%s/daemonsets" % quote(self.ns, safe=""),
            page_size=self.page_size,
            what="list DaemonSets in %s" % self.ns,
        )[0]
        pods = None
        renewed = []
        for ds in dss:
            spec = ds.get("spec") or {}
            if ((spec.get("updateStrategy") or {}).get("type")) != "OnDelete":
                continue
            tmpl = spec.get("template") or {}
            if P.labels_of(tmpl).get("app.kubernetes.io/component") == "nvidia-driver":
                continue
            want = [c.get("image") for c in ((tmpl.get("spec") or {}).get("containers") or [])]
            match = ((spec.get("selector") or {}).get("matchLabels")) or {}
            if not match:
                continue
            if pods is None:
                pods = self.operator_pods()
            for pod in pods:
                md = pod.get("metadata") or {}
                if (pod.get("spec") or {}).get("nodeName") not in members or md.get("deletionTimestamp"):
                    continue
                if any(P.labels_of(pod).get(k) != v for k, v in match.items()):
                    continue
                have = [c.get("image") for c in ((pod.get("spec") or {}).get("containers") or [])]
                if have == want:
                    continue
                change = "renew operand pod %s/%s on node %s (%s)" % (
                    self.ns,
                    md.get("name"),
                    pod["spec"]["nodeName"],
                    ", ".join(w for w in want if w not in have) or "new template",
                )
                self.changes.append(change)
                if not self.check_mode:
                    self.client.delete_pod(self.ns, md.get("name"))
                renewed.append("%s/%s" % (self.ns, md.get("name")))
        return renewed

    def wait_upgraded(self, members, target, timeout):
        """Wait until every member is upgraded; returns ``(failed {node: why}, status {node: detail})``.

        Stops at the first failed node (abort latency is one poll)."""
        deadline = self.clock() + timeout
        last = {}

        def check():
            by_name = self._by_name()
            last.clear()
            failed = {}
            for n in members:
                node = by_name.get(n)
                if node is None:
                    failed[n] = "node disappeared"
                    continue
                status, detail = P.node_upgrade_status(node, target)
                last[n] = detail
                if status == "failed":
                    failed[n] = detail
            if failed:
                return True, failed
            return all(P.node_upgrade_status(by_name[n], target)[0] == "done" for n in members), {}

        done, failed = self._wait(deadline, "upgrade", check)
        if not done:
            failed = {
                n: "not upgraded within %ds (%s)" % (timeout, last.get(n))
                for n in members
                if "state upgrade-done" not in (last.get(n) or "") or (target and target not in (last.get(n) or ""))
            } or dict.fromkeys(members, "not upgraded within %ds" % timeout)
        return failed, dict(last)

    def prove(self, members, target, since, opts):
        """Cluster-side proof of the members (labels, allocatable, validator and operands, no new Xid, DCGM).

        Waits up to ``proof_timeout`` for operands to settle; a new Xid fails at once."""
        deadline = self.clock() + opts.get("proof_timeout", 180)
        views = {}

        def check():
            nodes = {P.name_of(n): n for n in self.nodes()}
            by_node, _unscheduled = operands_by_node(self.operator_pods())
            events = self.node_events()
            dcgm = {}
            if opts.get("dcgm_url") and opts.get("fetch"):
                dcgm = P.dcgm_xid_by_node(opts["fetch"](opts["dcgm_url"]))
            failed = {}
            hard = False
            for n in members:
                if n not in nodes:
                    failed[n] = "node disappeared"
                    continue
                view = node_view(nodes[n], by_node.get(n))
                xids = P.xid_events(events, n, since)
                problems = P.prove_node(view, target, xids, dcgm.get(n))
                views[n] = {
                    "driver_version": (view.get("labels") or {}).get(P.DRIVER_VERSION_LABEL),
                    "upgrade_state": view.get("upgrade_state"),
                    "allocatable": view.get("allocatable"),
                    "capacity": view.get("capacity"),
                    "problems": problems,
                }
                if problems:
                    failed[n] = "; ".join(problems)
                    hard = hard or bool(xids) or bool(dcgm.get(n))
            return (not failed) or hard, failed

        _done, failed = self._wait(deadline, "proof", check)
        return failed, views

    def finish_wave(self, record, index, passed, reason=None, failed_nodes=None):
        """After the role's own proof (smoke pods, the user's test workloads): untaint and mark proven, or abort."""
        wave = self._wave(record, index)
        if not passed:
            nodes = failed_nodes or wave["nodes"]
            msg = "%s failed: %s" % (wave["name"], reason or "the role's proof failed")
            self.abort(record, index, dict.fromkeys(nodes, reason or "proof failed"), msg)
            raise CanaryAbort(msg, wave=index, failed=dict.fromkeys(nodes, reason))
        by_name = self._by_name()
        for n in wave["nodes"]:
            if n in by_name:
                self.untaint(by_name[n])
        wave["status"] = P.WAVE_PROVEN
        wave["finished"] = utc_now(self.clock)
        if P.next_wave(record) is None:
            record["phase"] = "done"
            if "operand_strategy" in record:
                cp = self.cluster_policy()
                have = (((cp or {}).get("spec") or {}).get("daemonsets") or {}).get("updateStrategy")
                if cp and have != record["operand_strategy"]:
                    self._write(
                        "ClusterPolicy %s: restore spec.daemonsets.updateStrategy=%s"
                        % (P.name_of(cp), record["operand_strategy"] or "(default)"),
                        "PATCH",
                        "/apis/nvidia.com/v1/clusterpolicies/%s" % quote(P.name_of(cp), safe=""),
                        {"spec": {"daemonsets": {"updateStrategy": record["operand_strategy"]}}},
                    )
            still = []
            for n in record.get("skip_labelled") or []:
                if n in by_name and n not in (record.get("unplanned") or []):
                    self.label_node(by_name[n], {UPGRADE_SKIP_LABEL: None}, "upgrade finished (remove skip label)")
                else:
                    still.append(n)
            record["skip_labelled"] = still
        self.save_record(record)
        return wave

    def abort(self, record, index, failed, reason):
        """Stop: failed nodes keep the canary taint and get an annotation saying why; every wave node that the
        controller has not started gets its skip label back; the record says aborted."""
        wave = self._wave(record, index)
        by_name = self._by_name()
        stamp = utc_now(self.clock)
        for n in wave["nodes"]:
            node = by_name.get(n)
            if node is None:
                continue
            self.taint(node, wave["name"])
            if n in failed:
                text = "%s %s: %s" % (stamp, wave["name"], failed[n])
                self.annotate_node(node, {P.FAILED_ANNOTATION: text[:1000]}, "record why the canary upgrade failed")
            state = P.labels_of(node).get(UPGRADE_STATE_LABEL) or ""
            not_started = state == "upgrade-required" or (
                n not in failed and state not in P.IN_PROGRESS_STATES and state != "upgrade-done"
            )
            if not_started:
                self.label_node(node, {UPGRADE_SKIP_LABEL: "true"}, "hold the upgrade after the abort")
        wave["status"] = P.WAVE_FAILED
        wave["reason"] = reason[:2000]
        wave["finished"] = stamp
        record["phase"] = "aborted"
        record["reason"] = reason[:2000]
        self.save_record(record)

    def rollback(self, record, nodes, cp, timeout):
        """Point the driver back at the record's source version and let every node that moved come back.

        Clears the failure annotations and canary taints, relabels upgrade-failed nodes upgrade-required, removes
        the skip labels this run set, and waits for every planned node to run the source version."""
        source = (record.get("from") or {}).get("driver_version")
        if not source:
            raise P.PlanError("the progress record has no source driver version to roll back to")
        self.set_driver_version(cp, source, {})
        by_name = {P.name_of(n): n for n in nodes}
        planned = [n for w in record["waves"] for n in w["nodes"] if n in by_name]
        for n in planned:
            node = by_name[n]
            if P.FAILED_ANNOTATION in P.annotations_of(node):
                self.annotate_node(node, {P.FAILED_ANNOTATION: None}, "clear the failure (rollback)")
            if P.labels_of(node).get(UPGRADE_STATE_LABEL) == "upgrade-failed":
                self.label_node(node, {UPGRADE_STATE_LABEL: "upgrade-required"}, "retry towards the old driver")
                # the controller cordoned it for the failed upgrade; with the old driver still in place it may not
                # walk the states again, so restore the cordon state it recorded before its first cordon
                initial = P.annotations_of(node).get(P.INITIAL_UNSCHEDULABLE_ANNOTATION)
                if initial == "false" and (node.get("spec") or {}).get("unschedulable"):
                    self._write(
                        "node %s: uncordon (schedulable before the failed upgrade)" % n,
                        "PATCH",
                        self.node_path(n),
                        {"spec": {"unschedulable": None}},
                    )
        for n in record.get("skip_labelled") or []:
            if n in by_name:
                self.label_node(by_name[n], {UPGRADE_SKIP_LABEL: None}, "rollback (remove skip label)")
        for n in planned:
            self.untaint(by_name[n])
        record["skip_labelled"] = []
        record["phase"] = "rolled-back"
        self.save_record(record)
        if self.check_mode or not timeout:
            return {}
        failed, _status = self.wait_upgraded(planned, source, timeout)
        return failed
