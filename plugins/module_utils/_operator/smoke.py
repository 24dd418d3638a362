# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""GPU smoke tests: one short-lived pod per selected node, requesting GPUs, pinned to that node.

* :func:`pod_spec` builds the pod (pure); :func:`select_nodes` picks the nodes (pure);
  :func:`classify` turns a pod (and its scheduling events) into a per-node result (pure).
* :class:`SmokeRun` drives a run against a ``_clients.k8s.K8sClient``: it sweeps leftovers of earlier runs
  (by label), creates at most ``concurrency`` pods at a time, watches them with one paginated LIST per
  poll (label selector of this run, never a GET per pod), reads each finished pod's log, deletes it, and in
  ``finally`` deletes whatever is left, so nothing of the run survives it. In claim mode (a
  ``smoke_claims.ClaimSetup``) the pods get their GPUs from ResourceClaims made from the run's template; a
  second LIST per poll reads which devices the run's claims got.

Pods are pinned with a required node affinity on ``kubernetes.io/hostname`` rather than ``spec.nodeName``:
the scheduler then places them, so a node that cannot take the pod (no allocatable GPU, an untolerated
taint, cordoned) leaves the pod Pending with a ``FailedScheduling`` event that names the reason.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import functools
import hashlib
import random
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.errors import GpuOpsError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import (
    annotations_of,
    labels_of,
    meta_of,
    name_of,
    to_int,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator import smoke_claims
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.cluster_view import GPU_RESOURCE, is_gpu_node

SMOKE_LABEL = "gpuops.io/smoke-test"
RUN_LABEL = "gpuops.io/smoke-test-run"
MANAGED_BY = ("app.kubernetes.io/managed-by", "gpuops.gpu_operator")
NODE_ANNOTATION = "gpuops.io/smoke-test-node"
HOSTNAME_LABEL = "kubernetes.io/hostname"

LOG_TAIL_LINES = 50
LOG_LIMIT_BYTES = 16384


class SmokeError(GpuOpsError):
    """Bad input (the message names it and the fix)."""


def run_labels(run_id):
    """The labels of everything a run creates (pods, claim templates, and the claims made from them)."""
    return {SMOKE_LABEL: "true", RUN_LABEL: run_id, MANAGED_BY[0]: MANAGED_BY[1]}


def sweep_selector():
    return "%s=true,%s=%s" % (SMOKE_LABEL, MANAGED_BY[0], MANAGED_BY[1])


def run_selector(run_id):
    return "%s=%s" % (RUN_LABEL, run_id)


def pod_name(run_id, node_name):
    """``gpuops-smoke-<run>-<node>``, trimmed to a valid name; a hash keeps trimmed names unique."""
    base = "gpuops-smoke-%s-%s" % (run_id, node_name.lower())
    if len(base) <= 63:
        return base
    digest = hashlib.sha256(node_name.encode("utf-8")).hexdigest()[:8]
    return (base[:54].rstrip("-.") + "-" + digest)[:63]


def gpus_for(node, gpus, resource=GPU_RESOURCE):
    """The number of ``resource`` the pod on ``node`` requests: an int, or ``all`` = the node's allocatable.

    ``all`` on a node that advertises none requests 1, so that the pod stays Pending and the scheduler says why.
    """
    if str(gpus).lower() == "all":
        alloc = ((node.get("status") or {}).get("allocatable") or {}).get(resource)
        return max(to_int(alloc, default=1), 1)
    try:
        count = int(str(gpus))
    except ValueError:
        raise SmokeError("gpus must be a positive integer or 'all', got %r" % (gpus,)) from None
    if count < 1:
        raise SmokeError("gpus must be at least 1 (or 'all'), got %d" % count)
    return count


def pod_spec(run_id, node, options):
    """The smoke pod for ``node`` (a node dict as a LIST returns it) with ``options`` (a :class:`.SmokeOptions`)."""
    name = name_of(node)
    hostname = labels_of(node).get(HOSTNAME_LABEL) or name
    count = gpus_for(node, options.gpus, options.resource)
    pod_labels = dict(options.pod_labels or {})
    pod_labels.update(run_labels(run_id))
    container = {
        "name": "smoke",
        "image": options.image,
        "resources": {"limits": {options.resource: str(count)}, "requests": {options.resource: str(count)}},
        "securityContext": {"allowPrivilegeEscalation": False},
    }
    if options.command:
        container["command"] = list(options.command)
    if options.args:
        container["args"] = list(options.args)
    spec = {
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 0,
        "automountServiceAccountToken": False,
        # the pod ends itself if a run is killed before its cleanup: a second guard next to the label sweep
        "activeDeadlineSeconds": int(options.timeout) + 60,
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": HOSTNAME_LABEL, "operator": "In", "values": [hostname]}]}
                    ]
                }
            }
        },
        "tolerations": [dict(t) for t in options.tolerations or ()],
        "containers": [container],
    }
    if options.runtime_class_name:
        spec["runtimeClassName"] = options.runtime_class_name
    if options.image_pull_secrets:
        spec["imagePullSecrets"] = [{"name": s} for s in options.image_pull_secrets]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": pod_name(run_id, name), "labels": pod_labels, "annotations": {NODE_ANNOTATION: name}},
        "spec": spec,
    }


def select_nodes(nodes, names=None, sample=None, percent=None, seed=None, gpu_nodes_only=True):
    """The node dicts to test, sorted by name.

    ``names`` restricts to those nodes (a name that is not in ``nodes`` is an error); otherwise GPU nodes
    (see ``_view.cluster_view.is_gpu_node``) when ``gpu_nodes_only``. Then ``sample`` (a count) or ``percent``
    (rounded up, at least one node) picks a random subset (``seed`` makes it repeatable).
    """
    by_name = {name_of(n): n for n in nodes}
    if names:
        missing = sorted(set(names) - set(by_name))
        if missing:
            raise SmokeError(
                "nodes %s are not in the cluster (or do not match label_selector). Fix the nodes option."
                % ", ".join(missing)
            )
        chosen = [by_name[n] for n in sorted(set(names))]
    else:
        chosen = [n for _unused, n in sorted(by_name.items()) if not gpu_nodes_only or is_gpu_node(n)]
    if sample is not None and percent is not None:
        raise SmokeError("sample and percent are mutually exclusive; set one of them")
    want = None
    if sample is not None:
        if sample < 1:
            raise SmokeError("sample must be at least 1, got %d" % sample)
        want = min(sample, len(chosen))
    elif percent is not None:
        if not 0 < percent <= 100:
            raise SmokeError("percent must be in (0, 100], got %s" % percent)
        want = min(len(chosen), max(1, -(-len(chosen) * int(percent * 100) // 10000)))
    if want is not None and want < len(chosen):
        chosen = sorted(random.Random(seed).sample(chosen, want), key=name_of)
    return chosen


def _container_state(pod):
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    for cs in statuses:
        if cs.get("name") == "smoke":
            return cs.get("state") or {}
    return (statuses[0].get("state") or {}) if statuses else {}


def _condition(pod, kind):
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            return cond
    return {}


def classify(pod, expected_output=None, logs=None, timed_out=False, schedule_event=None, node_event=None):
    """``(status, reason, exit_code)`` of one smoke pod; status ``None`` means still running.

    * ``passed``: Succeeded and, when ``expected_output`` is set, the log contains it.
    * ``failed``: Failed, a Succeeded pod whose log lacks the expected text, or timed out after scheduling.
    * ``pending``: timed out before it was scheduled; the reason is the scheduler's FailedScheduling message; or
      scheduled but never started, with the kubelet's ``node_event`` (``FailedPrepareDynamicResources``,
      ``FailedCreatePodSandBox``) if any.
    """
    status = pod.get("status") or {}
    phase = status.get("phase")
    term = _container_state(pod).get("terminated") or {}
    exit_code = term.get("exitCode")
    if phase == "Succeeded":
        if expected_output and (logs is None or expected_output not in logs):
            return "failed", "exited 0 but the log does not contain %r" % expected_output, exit_code
        return "passed", None, exit_code
    if phase == "Failed":
        if not term and status.get("reason") not in (None, "DeadlineExceeded"):  # refused by the kubelet
            return "failed", ": ".join(p for p in (status["reason"], status.get("message")) if p), None
        reason = term.get("message") or term.get("reason") or status.get("reason") or "Failed"
        detail = "exit code %s: %s" % (exit_code, reason) if exit_code is not None else reason
        if status.get("reason") == "DeadlineExceeded":
            detail = "activeDeadlineSeconds exceeded: %s" % (status.get("message") or "")
        return "failed", detail, exit_code
    if not timed_out:
        return None, None, None
    scheduled = _condition(pod, "PodScheduled")
    if not (pod.get("spec") or {}).get("nodeName") or scheduled.get("status") == "False":
        message = schedule_event or scheduled.get("message") or "not scheduled"
        return "pending", message, None
    waiting = _container_state(pod).get("waiting") or {}
    if phase == "Pending":
        what = waiting.get("reason") or "ContainerCreating"
        if waiting.get("message"):
            what += ": " + waiting["message"]
        if node_event:
            what += "; %s" % node_event
        return "pending", "scheduled but the container did not start (%s)" % what, None
    return "failed", "timed out while %s" % (phase or "Unknown"), None


class SmokeRun:
    """One smoke-test run. ``clock``/``sleep`` are injectable so unit tests run instantly."""

    def __init__(self, client, options, run_id=None, claims=None, clock=time.monotonic, sleep=time.sleep):
        self.client = client
        self.options = options
        self.namespace = options.namespace
        self.concurrency = max(1, int(options.concurrency))
        self.timeout = float(options.timeout)
        self.schedule_timeout = float(min(options.schedule_timeout, options.timeout))
        self.poll_interval = float(options.poll_interval)
        self.expected_output = options.expected_output
        self.collect_logs = options.collect_logs
        self.cleanup_timeout = float(options.cleanup_timeout)
        self.clock = clock
        self.sleep = sleep
        self.page_size = options.page_size
        self.run_id = run_id or uuid.uuid4().hex[:8]
        self.workers = max(1, int(options.workers))
        self.claims = claims  # a smoke_claims.ClaimSetup in claim mode
        self.swept = []
        self.leftovers = []

    # -- API helpers ---------------------------------------------------------------------------

    def _list(self, selector):
        path = "/api/v1/namespaces/%s/pods" % self.namespace
        return self.client.list_all(
            path, label_selector=selector, page_size=self.page_size, what="list smoke-test pods in %s" % self.namespace
        )[0]

    def _kubelet_refusals(self):
        """``{pod uid: message}`` of the kubelet's newest reason why a scheduled pod cannot start: its DRA claims
        cannot be prepared (claim runs), its sandbox cannot be created (a runtime or network failure)."""
        reasons = (("FailedPrepareDynamicResources",) if self.claims else ()) + ("FailedCreatePodSandBox",)
        refused = {}
        for reason in reasons:
            for uid, message in self._events(reason).items():
                refused.setdefault(uid, message)
        return refused

    def _events(self, reason):
        """``{pod uid: message}`` of the newest ``reason`` event per pod, from one LIST."""
        path = "/api/v1/namespaces/%s/events" % self.namespace
        events = self.client.list_all(
            path,
            field_selector="involvedObject.kind=Pod,reason=%s" % reason,
            page_size=self.page_size,
            what="list %s events in %s" % (reason, self.namespace),
        )[0]
        newest = {}
        for ev in events:
            uid = (ev.get("involvedObject") or {}).get("uid")
            stamp = ev.get("lastTimestamp") or ev.get("eventTime") or ""
            if uid and (uid not in newest or stamp >= newest[uid][0]):
                newest[uid] = (stamp, ev.get("message") or ev.get("note"))
        return {uid: msg for uid, (_unused, msg) in newest.items()}

    def sweep(self):
        """Delete smoke pods that an earlier, interrupted run left behind (any run id), then its claim templates and
        the admin-access label it set (``resourceclaimtemplate/NAME``, ``namespace/NAME label ...``)."""
        names = [name_of(p) for p in self._list(sweep_selector())]
        deleted = self._map(lambda name: self.client.delete_pod(self.namespace, name), names)
        self.swept = sorted(n for n, ok in zip(names, deleted) if ok)
        self.swept += smoke_claims.sweep(self.client, self.namespace, sweep_selector(), self.page_size)
        return self.swept

    # -- the run ------------------------------------------------------------------------------------

    def plan(self, nodes):
        """What check mode returns: per node the pod that would run (``pod``, ``node``, ``image``, ``resources``)."""
        pods = [self.make_pod(node) for node in nodes]
        return [
            {
                "pod": name_of(pod),
                "node": annotations_of(pod)[NODE_ANNOTATION],
                "image": pod["spec"]["containers"][0]["image"],
                "resources": self._requested(pod),
            }
            for pod in pods
        ]

    def make_pod(self, node):
        """The pod of this run for ``node``; in claim mode it gets its GPUs from the run's claim template."""
        pod = pod_spec(self.run_id, node, self.options)
        return smoke_claims.use_claim(pod, self.claims.template) if self.claims else pod

    def _requested(self, pod):
        return self.claims.resources if self.claims else pod["spec"]["containers"][0]["resources"]["limits"]

    def _map(self, fn, items):
        """``fn`` over ``items`` on up to ``workers`` threads (API round trips overlap); results in order."""
        items = list(items)
        if len(items) <= 1 or self.workers <= 1:
            return [fn(i) for i in items]
        with ThreadPoolExecutor(max_workers=min(self.workers, len(items))) as pool:
            return list(pool.map(fn, items))

    def run(self, nodes):
        """Test every node; returns ``{node name: result}``. Always deletes this run's pods."""
        queue = list(nodes)
        results = {}
        in_flight = {}  # pod name -> {"node", "started", "uid", "gpus", "devices"}
        try:
            if self.claims:
                self.claims.prepare()
            while queue or in_flight:
                batch = [self.make_pod(n) for n in queue[: max(0, self.concurrency - len(in_flight))]]
                del queue[: len(batch)]
                started = self.clock()
                for pod, created in zip(batch, self._map(lambda b: self.client.create_pod(self.namespace, b), batch)):
                    in_flight[name_of(pod)] = {
                        "node": annotations_of(pod)[NODE_ANNOTATION],
                        "started": started,
                        "uid": meta_of(created).get("uid"),
                        "gpus": self._requested(pod),
                        "devices": None,
                    }
                self.sleep(self.poll_interval)
                pods = {name_of(p): p for p in self._list(run_selector(self.run_id))}
                for name, devices in (self.claims.observe() if self.claims else {}).items():
                    if name in in_flight:
                        in_flight[name]["devices"] = devices
                now = self.clock()
                finished, expired, stuck = [], [], []
                for name, info in in_flight.items():
                    pod = pods.get(name)
                    age = now - info["started"]
                    if pod is None:
                        if age > self.timeout:
                            expired.append((name, None))
                        continue
                    phase = (pod.get("status") or {}).get("phase")
                    if phase in ("Succeeded", "Failed"):
                        finished.append((name, pod))
                        continue
                    unscheduled = not (pod.get("spec") or {}).get("nodeName")
                    if age > self.timeout or (unscheduled and age > self.schedule_timeout):
                        expired.append((name, pod))
                    elif phase == "Pending" and age > self.schedule_timeout:
                        stuck.append((name, pod))
                refused = self._kubelet_refusals() if stuck else None
                # scheduled, and the kubelet still cannot start it (its claims unprepared, no sandbox): decided
                expired.extend((n, p) for n, p in stuck if meta_of(p).get("uid") in refused)
                outcomes = self._map(functools.partial(self._finish, in_flight=in_flight, now=now), finished)
                for (name, _pod), result in zip(finished, outcomes):
                    results[in_flight.pop(name)["node"]] = result
                if expired:
                    live = any(p is not None for _n, p in expired)
                    events = self._events("FailedScheduling") if live else {}
                    if refused is None:
                        refused = self._kubelet_refusals() if live else {}
                    for name, pod in expired:
                        info = in_flight.pop(name)
                        if pod is None:
                            results[info["node"]] = self._result(
                                info, name, ("failed", "the pod disappeared", None), now
                            )
                            continue
                        uid = meta_of(pod).get("uid")
                        status, reason, exit_code = classify(
                            pod,
                            self.expected_output,
                            timed_out=True,
                            schedule_event=events.get(uid),
                            node_event=refused.get(uid),
                        )
                        if status == "failed":
                            reason = "%s after %ds" % (reason, self.timeout)
                        results[info["node"]] = self._result(info, name, (status, reason, exit_code), now)
                    self._map(lambda np: self.client.delete_pod(self.namespace, np[0]), expired)
        finally:
            self.cleanup()
        return results

    def _finish(self, name_pod, in_flight, now):
        """Read a finished pod's log, classify it, delete it; returns its result."""
        name, pod = name_pod
        info = in_flight[name]
        logs = None
        ran = bool(_container_state(pod).get("terminated"))  # a pod the kubelet refused has no container log
        if ran and (self.collect_logs or self.expected_output):
            logs = self.client.pod_log(
                self.namespace, name, container="smoke", tail_lines=LOG_TAIL_LINES, limit_bytes=LOG_LIMIT_BYTES
            )
        outcome = classify(pod, self.expected_output, logs=logs)
        self.client.delete_pod(self.namespace, name)
        return self._result(info, name, outcome, now, logs=logs if self.collect_logs else None)

    def _result(self, info, name, outcome, now, logs=None):
        """The result of one pod; ``outcome`` is what :func:`classify` returned for it."""
        status, reason, exit_code = outcome
        return {
            "node": info["node"],
            "pod": name,
            "status": status,
            "reason": reason,
            "duration": round(now - info["started"], 3),
            "exit_code": exit_code,
            "resources": info["gpus"],
            "devices": info.get("devices"),
            "logs": logs,
        }

    def cleanup(self):
        """Delete every pod of this run and wait (bounded) until they are gone; then, in claim mode, the template
        (and the label the run set) and wait for the claims; names left go to ``leftovers``."""
        try:
            remaining = self._list(run_selector(self.run_id))
            live = [name_of(p) for p in remaining if not meta_of(p).get("deletionTimestamp")]
            self._map(lambda name: self.client.delete_pod(self.namespace, name), live)
            deadline = self.clock() + self.cleanup_timeout
            while remaining and self.clock() < deadline:
                self.sleep(min(self.poll_interval, 1.0))
                remaining = self._list(run_selector(self.run_id))
            self.leftovers = sorted(name_of(p) for p in remaining)
            if self.claims:
                self.leftovers += self.claims.cleanup(self.clock, self.sleep, max(deadline - self.clock(), 1.0))
        except Exception:  # noqa: BLE001 - the run's own error matters more; the next run's sweep catches these
            self.leftovers = ["(cleanup failed; the next run sweeps label %s)" % sweep_selector()]
        return self.leftovers


def summarize(results, selected):
    """Counts by status over ``results``; ``selected`` is the list of node names that were tested."""
    counts = {"passed": 0, "failed": 0, "pending": 0}
    for res in results.values():
        counts[res["status"]] = counts.get(res["status"], 0) + 1
    counts["total"] = len(selected)
    counts["all_passed"] = counts["passed"] == len(selected)
    return counts
