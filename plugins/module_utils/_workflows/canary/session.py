# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""What every step of one canary run shares: the API client and its reads, the progress record, and the writes.

Every write goes through :meth:`CanarySession.act`, which records a human-readable change and does nothing in check
mode. Reads are a few paginated LISTs per step or poll, never one GET per node.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import queue
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from urllib.parse import quote

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.k8s import K8sError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.operator_names import (
    cluster_policy_in_use,
    list_drivers,
    list_policies,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import (
    annotations_of,
    labels_of,
    meta_of,
    name_of,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.options import CanaryOptions
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.record import (
    RECORD_KEY,
    decode_record,
    encode_record,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.taints import (
    taints_with,
    taints_without,
)

MERGE = "application/merge-patch+json"
#: The shortest time between two checks of a wait, as a share of the poll interval (a burst of changes wakes it
#: once).
WATCH_GAP = 0.1
FIELD_MANAGER = "gpuops-canary-upgrade"
#: How many nodes' writes :meth:`CanarySession.each` makes at once (the API server's default in-flight limit for
#: mutations is 200; the upgrade controller itself patches nodes a few at a time).
WRITERS = 16
DEFAULTS = CanaryOptions()


def utc_now(clock=time.time):
    """``clock()`` as an ISO 8601 UTC timestamp (``2026-12-03T10:00:00Z``)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(clock()))


def node_path(name):
    return "/api/v1/nodes/%s" % quote(name, safe="")


def cluster_policy_path(cp):
    return "/apis/nvidia.com/v1/clusterpolicies/%s" % quote(name_of(cp), safe="")


def about(members):
    """A ``wake`` for :meth:`CanarySession.wait`: a change of one of the nodes ``members``, of a pod on one, of an
    Event of one, or of any other kind of object."""

    def wake(event):
        obj = event.get("object") or {}
        kind = obj.get("kind")
        if kind == "Node":
            return name_of(obj) in members
        if kind == "Pod":
            return (obj.get("spec") or {}).get("nodeName") in members
        if kind == "Event":
            return (obj.get("involvedObject") or {}).get("name") in members
        return True

    return wake


class Pause(Exception):
    """This call's share of a wait (``progress_interval``) is over: the step returns ``progress`` (where it stands)
    and the caller calls it again with ``continue_wait``; the waits keep their deadlines in the record."""

    def __init__(self, progress):
        super().__init__("still waiting")
        self.progress = progress


class CanarySession:
    """One run over ``client`` (a ``_clients.k8s.K8sClient``) in the operator ``namespace`` with ``options`` (a
    :class:`.options.CanaryOptions`: record ConfigMap, ClusterPolicy name (None: the one reconciled), canary taint,
    poll interval, how long a call may wait before it returns where it stands (``progress_interval``, None: until the
    wait ends), whether it continues the call before's waits (``continue_wait``)); check mode and clock;
    ``changes`` (every write made or, in check mode, planned)."""

    def __init__(
        self,
        client,
        namespace="gpu-operator",
        options=DEFAULTS,
        check_mode=False,
        clock=time.time,
        sleep=time.sleep,
    ):
        self.client = client
        self.ns = namespace
        self.options = options
        self.cp_name = options.cluster_policy
        self.cm_name = options.record_name
        self.taint_key = options.taint_key
        self.taint_effect = options.taint_effect
        self.check_mode = check_mode
        self.clock = clock
        self.sleep = sleep
        self.poll = options.poll_interval
        self.page_size = options.page_size
        self.pause_at = clock() + options.progress_interval if options.progress_interval else None
        self.continue_wait = options.continue_wait
        self.changes = []
        self.lease = None  # the record's Lease while a writing step runs (steps.run_step)
        self._stored = None
        self._local = threading.local()

    # ------------------------------------------------------------------------------------------ reads
    def nodes(self):
        return self.client.list_core("nodes", page_size=self.page_size)

    def nodes_by_name(self):
        return {name_of(n): n for n in self.nodes()}

    def operator_pods(self):
        return self.client.list_core("pods", namespace=self.ns, page_size=self.page_size)

    def all_pods(self):
        return self.client.list_core("pods", page_size=self.page_size)

    def pdbs(self):
        return self.client.list_all(
            "/apis/policy/v1/poddisruptionbudgets", page_size=self.page_size, what="list poddisruptionbudgets"
        )[0]

    def node_warnings(self):
        """The Warning events of nodes (an Xid is one; the upgrade controller's own Normal events, thousands after
        a large upgrade, are left on the server)."""
        return self.client.list_core(
            "events",
            namespace="default",
            field_selector="involvedObject.kind=Node,type=Warning",
            page_size=self.page_size,
        )

    def read_all(self, reads):
        """``{name: read()}`` for the ``reads`` (``{name: callable}``), made at once; the first error is raised."""
        with ThreadPoolExecutor(max_workers=len(reads)) as pool:
            futures = {name: pool.submit(read) for name, read in reads.items()}
        return {name: future.result() for name, future in futures.items()}

    def cluster_policy(self):
        """The ClusterPolicy in use (``_clients.operator_names.cluster_policy_in_use``), or None."""
        return cluster_policy_in_use(list_policies(self.client, self.page_size), self.cp_name)

    def nvidia_drivers(self):
        return list_drivers(self.client, self.page_size) or []

    def daemonsets(self, label_selector=None, what="DaemonSets"):
        """The DaemonSets in the operator namespace (``what`` names them in an error)."""
        return self.client.list_all(
            "/apis/apps/v1/namespaces/%s/daemonsets" % quote(self.ns, safe=""),
            label_selector=label_selector,
            page_size=self.page_size,
            what="list %s in %s" % (what, self.ns),
        )[0]

    def nfd_daemonsets(self):
        return self.daemonsets("app.kubernetes.io/name=node-feature-discovery", "NFD DaemonSets")

    def timers(self, holder):
        """The timers of the waits of ``holder`` (a wave, or the record for the rollback), started afresh unless
        this call continues the waits of the one before."""
        if not self.continue_wait or not isinstance(holder.get("waits"), dict):
            holder["waits"] = {}
        return holder["waits"]

    def timer(self, holder, name):
        """The timer ``{"since", "moved", "marks"}`` of the wait ``name`` of ``holder`` (see :meth:`timers`)."""
        waits = holder.setdefault("waits", {})
        if name not in waits:
            now = int(self.clock())
            waits[name] = {"since": now, "moved": now, "marks": {}}
        return waits[name]

    def wait(self, deadline, check, progress=None, wake=None):
        """Run ``check()`` (returns ``(done, detail)``) until done or ``deadline``; returns ``(done, detail)``. When
        this call's share of waiting ends first, raises :class:`Pause` with ``progress()``.

        Between two checks it waits on watches of what ``check()`` listed, so the first change for which
        ``wake(event)`` is true (None: any change) wakes it, and runs ``check()`` again after ``poll`` seconds at
        most (the resync); a client that cannot watch, or whose watch fails, polls."""
        listed = getattr(self.client, "listed", None)
        while True:
            if listed is not None:
                listed.clear()
            start = self.clock()
            done, detail = check()
            now = self.clock()
            if done or now >= deadline:
                return done, detail
            if self.pause_at is not None and now >= self.pause_at:
                raise Pause(progress() if progress else {"waiting": True, "lines": []})
            resync = min(start + self.poll, deadline)
            if not (listed and resync > now and self._changed(dict(listed), resync - now, wake)):
                self.sleep(max(0.0, resync - self.clock()))
            gap = start + self.poll * WATCH_GAP - self.clock()
            if gap > 0:
                self.sleep(gap)

    def _changed(self, listed, seconds, wake):
        """True when a watch of one of the LISTs ``listed`` (see ``K8sClient.listed``) sees a change that ``wake``
        accepts within ``seconds``; False when none did or no watch could run."""
        found = queue.Queue()

        def watch(path, since):
            try:
                for event in self.client.watch(path, since, seconds):
                    if wake is None or wake(event):
                        found.put(True)
                        return
            except K8sError:
                pass
            found.put(False)

        for path, since in listed.items():
            threading.Thread(target=watch, args=(path, since), daemon=True).start()
        end = time.monotonic() + seconds
        for _path in listed:
            try:
                if found.get(timeout=max(0.0, end - time.monotonic())):
                    return True
            except queue.Empty:
                break
        return False

    # ------------------------------------------------------------------------------------------ record
    def cm_path(self):
        return "/api/v1/namespaces/%s/configmaps/%s" % (quote(self.ns, safe=""), quote(self.cm_name, safe=""))

    def read_record(self):
        """The stored progress record, or None."""
        record = decode_record(self.client.get_or_none(self.cm_path(), what="read ConfigMap %s" % self.cm_name))
        self._stored = self._content(record)
        return record

    @staticmethod
    def _content(record):
        return None if record is None else encode_record(dict(record, updated=None))

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
            "data": {RECORD_KEY: encode_record(record)},
        }
        self.write(
            "save the progress record in ConfigMap %s/%s (phase %s)" % (self.ns, self.cm_name, record.get("phase")),
            "PATCH",
            self.cm_path(),
            body,
            content_type="application/apply-patch+yaml",
            query={"fieldManager": FIELD_MANAGER, "force": "true"},
        )

    # ------------------------------------------------------------------------------------------ writes
    def act(self, change, call):
        """Record ``change`` and make it with ``call()``, unless in check mode; a refused call takes it back."""
        changes = getattr(self._local, "changes", None)
        if changes is None:
            changes = self.changes
        changes.append(change)
        if self.check_mode:
            return None
        if self.lease is not None:
            self.lease.check()
        try:
            return call()
        except K8sError:
            changes.pop()
            raise

    def each(self, nodes, write):
        """``write(node)`` for every one of ``nodes``, the writes of up to :data:`WRITERS` nodes at once (each
        node's own writes stay in order). The changes are recorded in the order of ``nodes``; when a write fails the
        other nodes' writes still run, and the first error is raised after them."""
        nodes = list(nodes)
        if self.check_mode or len(nodes) < 2:
            for node in nodes:
                write(node)
            return
        logs = [[] for _node in nodes]

        def one(index):
            self._local.changes = logs[index]
            try:
                write(nodes[index])
            finally:
                self._local.changes = None

        with ThreadPoolExecutor(max_workers=min(WRITERS, len(nodes))) as pool:
            futures = [pool.submit(one, index) for index in range(len(nodes))]
        for log in logs:
            self.changes.extend(log)
        for future in futures:
            if future.exception() is not None:
                raise future.exception()

    def write(self, change, method, path, body, content_type=MERGE, query=None):
        """One write request (a merge patch unless ``content_type`` says otherwise), through :meth:`act`."""
        send = partial(self.client.send_typed, method, path, body, query=query, content_type=content_type, what=change)
        return self.act(change, send)

    def label_node(self, node, labels, why):
        """Set (or, with None, remove) the node's ``labels`` it does not have yet; True if any."""
        return self.update_node(node, [("labels", labels, why)])

    def annotate_node(self, node, annotations, why):
        """Set (or, with None, remove) the node's ``annotations`` it does not have yet; True if any."""
        return self.update_node(node, [("annotations", annotations, why)])

    def taint(self, node, value, metadata=()):
        """Add the canary taint with ``value`` (the wave's name), with the ``metadata`` changes in the same write
        (see :meth:`update_node`); True if anything changed."""
        return self.update_node(node, metadata, taint=value)

    def untaint(self, node):
        """Remove the canary taint; True if the node had it."""
        return self.update_node(node, (), taint=False)

    def update_node(self, node, metadata, taint=None, attempts=5):
        """One PATCH of the node, when it changes anything: ``metadata`` ``[(field, {key: value, or None to
        remove}, why)]`` (field ``labels`` or ``annotations``) for the keys the node does not have so yet, and with
        ``taint`` the canary taint added with that value (False: removed). True if anything changed.

        A taint change replaces the node's taint list, so it is made on the node's resourceVersion; on a conflict
        (HTTP 409: the node changed meanwhile, e.g. the operator labelled it) the node is read again and the change
        tried again, ``attempts`` times in all."""
        body, whys = {"metadata": {}}, []
        if taint is not None:
            taints = (node.get("spec") or {}).get("taints")
            if taint is False:
                taints, changed = taints_without(taints, self.taint_key, self.taint_effect)
            else:
                taints, changed = taints_with(taints, self.taint_key, self.taint_effect, taint)
            if changed:
                verb = "remove" if taint is False else "add"
                whys.append("%s taint %s:%s" % (verb, self.taint_key, self.taint_effect))
                body["metadata"]["resourceVersion"] = meta_of(node).get("resourceVersion")
                body["spec"] = {"taints": taints or None}
        have = {"labels": labels_of(node), "annotations": annotations_of(node)}
        for field, values, why in metadata:
            want = {k: v for k, v in values.items() if have[field].get(k) != v}
            if want:
                body["metadata"].setdefault(field, {}).update(want)
                whys.append(why)
        if not whys:
            return False
        name = name_of(node)
        try:
            self.write("node %s: %s" % (name, "; ".join(whys)), "PATCH", node_path(name), body)
        except K8sError as exc:
            if exc.status != 409 or attempts <= 1:
                raise
            fresh = self.client.get(node_path(name), what="read node %s" % name)
            return self.update_node(fresh, metadata, taint, attempts - 1)
        return True
