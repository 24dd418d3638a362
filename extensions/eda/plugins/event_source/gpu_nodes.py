# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

"""gpuops.gpu_operator.gpu_nodes: an Event-Driven Ansible source of GPU node events (docs/eda.md).

It watches the Nodes that ``label_selector`` selects (filtered by the API server), and optionally the Warning Events
written about Nodes and the DRA ResourceSlices, and puts one event on the queue per node and purpose:

- ``{"gpu_node": {"action": "admit", "node": N, "reasons": [...], ...}}`` when a GPU node appeared, changed its GPU
  capability (its ``nvidia.com/`` labels but the driver upgrade and MIG config states, its allocatable or capacity
  ``nvidia.com/gpu``, its ResourceSlices' devices) or lost its admission record or taint;
- ``{"gpu_node": {"action": "triage", "node": N, "reasons": ["xid"], "message": ...}}`` when a Warning Event whose
  reason matches ``event_reason`` was written about a selected node.

Each watch lists once, then watches from the list's resourceVersion with bookmarks (``allowWatchBookmarks``) and
resumes from the last version it saw; a 410 Gone (the version was compacted away) makes it list again and compare
with what it knew, so no change is lost across an API server restart. Errors (429, 5xx, a refused or dropped
connection) are retried after a bounded exponential backoff with full jitter (a 429's Retry-After when longer).
Events of one node are coalesced: one event per node and action once ``debounce`` seconds pass without a new change
(at most ``max_delay`` after the first), so a node's burst of label changes runs the admission path once; a capability
that is back where it was when the event is due announces nothing (a device plugin restart).

Arguments (all optional):
  kubeconfig, context: as for the kubernetes client (default: in-cluster, then ~/.kube/config or KUBECONFIG).
  label_selector: the GPU nodes (default ``feature.node.kubernetes.io/pci-10de.present=true``, NFD's NVIDIA label).
  admission_annotation, admission_taint: the gate's record and taint (``gpuops.io/admission``,
    ``gpuops.io/unvalidated``).
  initial: which nodes found by the first list are announced - ``unadmitted`` (default: those without an admission
    record), ``all`` or ``none``.
  watch_events: watch Warning Events about Nodes (default true); event_reason: regex on the reason (``Xid``).
  resource_slices: watch ResourceSlices of ``slice_driver`` (default false, ``gpu.nvidia.com``).
  debounce, max_delay: seconds (default 10 and 60).
  watch_timeout: seconds each watch request stays open (default 300); backoff_initial, backoff_max: seconds (1, 30).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import re
import threading
import time

DOCUMENTATION = r"""
short_description: GPU node events for the admission gate (appeared, capability changed, admission lost, Xid)
description:
  - Watches GPU Nodes (server-side label selector), optionally Warning Events about Nodes and DRA ResourceSlices,
    with resourceVersion resumption, bookmarks, a relist on 410 Gone and a bounded backoff with jitter.
  - Coalesces per node and action (debounce) and puts C(gpu_node) events on the queue.
"""

LOG = logging.getLogger("gpuops.gpu_operator.gpu_nodes")
USER_AGENT = "gpuops-eda-gpu-nodes/1"
GPU_RESOURCE = "nvidia.com/gpu"
GPU_LABEL_PREFIX = "nvidia.com/"
#: ``nvidia.com/`` labels that say where a node is in a process, not what it can do: NVIDIA's driver upgrade state
#: machine and the MIG manager walk every node through them (the capability labels change once the change is done).
PROGRESS_LABELS = frozenset({"nvidia.com/gpu-driver-upgrade-state", "nvidia.com/mig.config.state"})
RETRYABLE = frozenset({408, 429, 500, 502, 503, 504})
DEFAULTS = {
    "label_selector": "feature.node.kubernetes.io/pci-10de.present=true",
    "admission_annotation": "gpuops.io/admission",
    "admission_taint": "gpuops.io/unvalidated",
    "initial": "unadmitted",
    "watch_events": True,
    "event_reason": "Xid",
    "resource_slices": False,
    "slice_driver": "gpu.nvidia.com",
    "debounce": 10.0,
    "max_delay": 60.0,
    "watch_timeout": 300,
    "backoff_initial": 1.0,
    "backoff_max": 30.0,
}


class SourceError(Exception):
    """A request failed; ``status`` is the HTTP status (None: no response), ``retry_after`` the server's hint."""

    def __init__(self, message, status=None, retry_after=None):
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


# ------------------------------------------------------------------------------------------ what a node is


def node_view(node, annotation, taint_key):
    """What the source compares of one Node: its GPU capability and its admission state."""
    meta = node.get("metadata") or {}
    status = node.get("status") or {}
    labels = meta.get("labels") or {}
    return {
        "capability": {
            "labels": {
                k: v for k, v in sorted(labels.items()) if k.startswith(GPU_LABEL_PREFIX) and k not in PROGRESS_LABELS
            },
            "allocatable": (status.get("allocatable") or {}).get(GPU_RESOURCE),
            "capacity": (status.get("capacity") or {}).get(GPU_RESOURCE),
        },
        "record": (meta.get("annotations") or {}).get(annotation),
        "tainted": any(t.get("key") == taint_key for t in (node.get("spec") or {}).get("taints") or []),
    }


def record_state(text):
    """The ``state`` of an admission record (held, admitted) or None."""
    try:
        return (json.loads(text) or {}).get("state") if text else None
    except (ValueError, AttributeError):
        return None


def admit_reasons(old, new, slices_changed=False):
    """Why a node whose view went from ``old`` (None: unknown so far) to ``new`` needs the admission path ([])."""
    if old is None:
        return ["appeared"]
    reasons = []
    if old["capability"] != new["capability"] or slices_changed:
        reasons.append("capability-changed")
    if old["record"] and not new["record"]:
        reasons.append("admission-record-lost")
    elif old["tainted"] and not new["tainted"] and record_state(new["record"]) != "admitted":
        reasons.append("admission-taint-lost")
    return reasons


def slice_devices(slices):
    """Node name -> sorted device names of its ResourceSlices (``{uid: slice}``)."""
    out = {}
    for item in slices.values():
        spec = item.get("spec") or {}
        node = spec.get("nodeName")
        if node:
            out.setdefault(node, []).extend(d.get("name") for d in spec.get("devices") or [])
    return {n: sorted(d) for n, d in out.items()}


# ------------------------------------------------------------------------------------------ coalescing


class Coalescer:
    """Pending events per (node, action): a change merges into the pending event; an event is due once
    ``debounce`` seconds passed since its last change, or ``max_delay`` since its first."""

    def __init__(self, debounce, max_delay, clock=time.monotonic):
        self.debounce = float(debounce)
        self.max_delay = max(float(max_delay), self.debounce)
        self.clock = clock
        self.pending = {}

    def add(self, node, action, reasons, undone_at=None, **data):
        """Merge one change into the pending event of ``(node, action)``. ``undone_at``: the capability from before a
        change that only changed the capability - the event is dropped when it is due with ``data["capability"]``
        back at that value (a device plugin restarting takes a node's GPUs away for a second and gives them back)."""
        now = self.clock()
        key = (node, action)
        entry = self.pending.get(key)
        if entry is None:
            entry = self.pending[key] = {"first": now, "reasons": [], "data": {}, "undone_at": undone_at}
        elif undone_at is None:
            entry["undone_at"] = None
        entry["last"] = now
        entry["reasons"].extend(r for r in reasons if r not in entry["reasons"])
        entry["data"].update(data)

    def drop(self, node):
        for key in [k for k in self.pending if k[0] == node]:
            del self.pending[key]

    def _due_at(self, entry):
        return min(entry["last"] + self.debounce, entry["first"] + self.max_delay)

    def due(self):
        """The events due now (removed from pending), oldest first."""
        now = self.clock()
        ready = sorted((e["first"], k) for k, e in self.pending.items() if self._due_at(e) <= now)
        out = []
        for _first, (node, action) in ready:
            entry = self.pending.pop((node, action))
            if entry["undone_at"] is not None and entry["data"].get("capability") == entry["undone_at"]:
                continue
            out.append({"gpu_node": {"action": action, "node": node, "reasons": entry["reasons"], **entry["data"]}})
        return out

    def next_wait(self):
        """Seconds until the next event is due (None: nothing pending)."""
        if not self.pending:
            return None
        return max(0.0, min(self._due_at(e) for e in self.pending.values()) - self.clock())


# ------------------------------------------------------------------------------------------ the state


class Tracker:
    """What the source knows of the selected nodes, their slices and the Warning events it has seen; turns each
    list or watch event into coalesced gpu_node events."""

    def __init__(self, args, coalescer):
        self.annotation = args["admission_annotation"]
        self.taint = args["admission_taint"]
        self.initial = args["initial"]
        self.reason = re.compile(args["event_reason"])
        self.coalescer = coalescer
        self.nodes = {}  # name -> view
        self.slices = {}  # uid -> slice
        self.devices = {}  # node -> devices
        self.events = {}  # uid -> count seen
        self.listed = set()  # the kinds listed at least once

    # nodes
    def nodes_listed(self, items):
        first = "nodes" not in self.listed
        self.listed.add("nodes")
        seen = set()
        for node in items:
            name = (node.get("metadata") or {}).get("name")
            seen.add(name)
            if first and self.initial != "all":
                view = node_view(node, self.annotation, self.taint)
                self.nodes[name] = view
                if self.initial == "unadmitted" and not view["record"]:
                    self.coalescer.add(name, "admit", ["appeared"], **self._data(view))
                continue
            self.node_event("MODIFIED" if name in self.nodes else "ADDED", node)
        for name in set(self.nodes) - seen:
            self._gone(name)

    def node_event(self, kind, node):
        name = (node.get("metadata") or {}).get("name")
        if kind == "DELETED":
            self._gone(name)
            return
        old = self.nodes.get(name)
        new = node_view(node, self.annotation, self.taint)
        reasons = admit_reasons(old, new)
        self.nodes[name] = new
        if reasons:
            undone_at = old["capability"] if reasons == ["capability-changed"] else None
            self.coalescer.add(name, "admit", reasons, undone_at=undone_at, **self._data(new))

    def _gone(self, name):
        self.nodes.pop(name, None)
        self.coalescer.drop(name)

    def _data(self, view):
        return {"capability": view["capability"], "admission": record_state(view["record"])}

    # ResourceSlices
    def slices_listed(self, items):
        self.slices = {(s.get("metadata") or {}).get("uid"): s for s in items}
        self._slices_changed()

    def slice_event(self, kind, item):
        uid = (item.get("metadata") or {}).get("uid")
        if kind == "DELETED":
            self.slices.pop(uid, None)
        else:
            self.slices[uid] = item
        self._slices_changed()

    def _slices_changed(self):
        devices = slice_devices(self.slices)
        for name in set(devices) | set(self.devices):
            if devices.get(name) != self.devices.get(name) and name in self.nodes:
                self.coalescer.add(name, "admit", ["capability-changed"], **self._data(self.nodes[name]))
        self.devices = devices

    # Warning events about nodes
    def events_listed(self, items):
        first = "events" not in self.listed
        self.listed.add("events")
        counts = {}
        for ev in items:
            uid = (ev.get("metadata") or {}).get("uid")
            counts[uid] = ev.get("count") or 1
            if not first:
                self.event_event("ADDED", ev)
        self.events = counts

    def event_event(self, kind, ev):
        uid = (ev.get("metadata") or {}).get("uid")
        if kind == "DELETED":
            self.events.pop(uid, None)
            return
        count = ev.get("count") or 1
        if self.events.get(uid) == count:
            return
        self.events[uid] = count
        node = (ev.get("involvedObject") or {}).get("name")
        if ev.get("type") == "Warning" and self.reason.search(ev.get("reason") or "") and node in self.nodes:
            self.coalescer.add(
                node, "triage", ["xid"], event_reason=ev.get("reason"), message=(ev.get("message") or "")[:500]
            )


# ------------------------------------------------------------------------------------------ watching


class Backoff:
    """Bounded exponential backoff with full jitter; ``reset`` after a success."""

    def __init__(self, initial, maximum, rand=random.random):
        self.initial, self.maximum, self.rand, self.tries = float(initial), float(maximum), rand, 0

    def next(self, retry_after=None):
        ceiling = min(self.maximum, self.initial * (2**self.tries))
        self.tries += 1
        delay = self.rand() * ceiling
        return min(self.maximum, max(delay, float(retry_after or 0)))

    def reset(self):
        self.tries = 0


class Watch:
    """One resource: list, then watch from the list's resourceVersion with bookmarks, resuming from the last version
    seen; relist on 410 Gone; back off on other errors. Runs in a thread until ``stop`` is set; each result goes to
    ``deliver(kind, payload)`` (kind ``LISTED`` with the items, or the watch event's type with the object)."""

    def __init__(self, name, call, deliver, stop, args, selectors, sleep=None):
        self.name, self.call, self.deliver, self.stop = name, call, deliver, stop
        self.selectors = selectors
        self.timeout = int(args["watch_timeout"])
        self.backoff = Backoff(args["backoff_initial"], args["backoff_max"])
        self.sleep = sleep or stop.wait
        self.rv = None

    def run(self):
        while not self.stop.is_set():
            try:
                if self.rv is None:
                    self._list()
                self._watch()
                self.backoff.reset()
            except SourceError as exc:
                if exc.status == 410:
                    LOG.info("%s: resourceVersion %s is gone; listing again", self.name, self.rv)
                    self.rv = None
                    continue
                delay = self.backoff.next(exc.retry_after)
                LOG.warning("%s: %s; retrying in %.1f s", self.name, exc, delay)
                self.sleep(delay)
            except (ValueError, KeyError, TypeError) as exc:  # a line or object we could not read: list again
                delay = self.backoff.next()
                LOG.warning("%s: unreadable response (%s); listing again in %.1f s", self.name, exc, delay)
                self.rv = None
                self.sleep(delay)

    def _list(self):
        items, cont, rv = [], None, None
        while True:
            page = self.call(limit=500, _continue=cont, **self.selectors)
            items.extend(page.get("items") or [])
            rv = (page.get("metadata") or {}).get("resourceVersion")
            cont = (page.get("metadata") or {}).get("continue")
            if not cont:
                break
        self.rv = rv
        self.deliver("LISTED", items)

    def _watch(self):
        lines = self.call(
            watch=True,
            resource_version=self.rv,
            allow_watch_bookmarks=True,
            timeout_seconds=self.timeout,
            **self.selectors,
        )
        for line in lines:
            if self.stop.is_set():
                return
            if not line or not line.strip():
                continue
            event = json.loads(line)
            obj = event.get("object") or {}
            if event.get("type") == "ERROR":
                raise SourceError(obj.get("message") or "watch error", obj.get("code"))
            rv = (obj.get("metadata") or {}).get("resourceVersion")
            if rv:
                self.rv = rv
            if event.get("type") != "BOOKMARK":
                self.deliver(event.get("type"), obj)


# ------------------------------------------------------------------------------------------ the client


def _client_calls(args):
    """name -> call(**kw) over the kubernetes client: a page (dict) or, with watch=True, an iterator of lines."""
    from kubernetes import client, config
    from kubernetes.client.rest import ApiException
    from kubernetes.watch.watch import iter_resp_lines
    from urllib3.exceptions import HTTPError

    configuration = client.Configuration()
    if args.get("kubeconfig") or not _in_cluster():
        config.load_kube_config(args.get("kubeconfig"), args.get("context"), client_configuration=configuration)
    else:
        config.load_incluster_config(client_configuration=configuration)
    configuration.retries = False  # the source's own backoff is the only retry: each request is one it counts
    api = client.ApiClient(configuration)
    api.user_agent = USER_AGENT
    core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)

    def wrap(fn):
        def call(watch=False, _continue=None, timeout_seconds=None, **kw):
            kw = {k: v for k, v in kw.items() if v is not None}
            if _continue:
                kw["_continue"] = _continue
            try:
                if watch:
                    resp = fn(
                        watch=True,
                        timeout_seconds=timeout_seconds,
                        _preload_content=False,
                        _request_timeout=(10, timeout_seconds + 30),
                        **kw,
                    )
                    return _lines(resp, iter_resp_lines)
                return json.loads(fn(_preload_content=False, _request_timeout=60, **kw).data)
            except ApiException as exc:
                retry = (exc.headers or {}).get("Retry-After")
                raise SourceError(
                    "HTTP %s %s" % (exc.status, exc.reason), exc.status, float(retry) if retry else None
                ) from None
            except (HTTPError, OSError) as exc:
                raise SourceError("connection: %s" % exc) from None

        return call

    def slices(**kw):
        return custom.list_cluster_custom_object("resource.k8s.io", "v1", "resourceslices", **kw)

    return {
        "nodes": wrap(core.list_node),
        "events": wrap(core.list_event_for_all_namespaces),
        "slices": wrap(slices),
    }


def _lines(resp, iter_resp_lines):
    from urllib3.exceptions import HTTPError

    try:
        if not 200 <= resp.status <= 299:
            raise SourceError("HTTP %s" % resp.status, resp.status)
        yield from iter_resp_lines(resp)
    except (HTTPError, OSError) as exc:
        raise SourceError("connection: %s" % exc) from None
    finally:
        resp.close()
        resp.release_conn()


def _in_cluster():
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST"))


# ------------------------------------------------------------------------------------------ the plugin


def watches(args, calls, deliver, stop):
    """The Watch of each resource the arguments ask for."""
    out = [Watch("nodes", calls["nodes"], deliver("nodes"), stop, args, {"label_selector": args["label_selector"]})]
    if args["watch_events"]:
        selector = {"field_selector": "involvedObject.kind=Node,type=Warning"}
        out.append(Watch("events", calls["events"], deliver("events"), stop, args, selector))
    if args["resource_slices"]:
        selector = {"field_selector": "spec.driver=%s" % args["slice_driver"]}
        out.append(Watch("slices", calls["slices"], deliver("slices"), stop, args, selector))
    return out


def apply(tracker, resource, kind, payload):
    """One delivered result into the tracker."""
    listed, event = {
        "nodes": (tracker.nodes_listed, tracker.node_event),
        "events": (tracker.events_listed, tracker.event_event),
        "slices": (tracker.slices_listed, tracker.slice_event),
    }[resource]
    if kind == "LISTED":
        listed(payload)
    else:
        event(kind, payload)


def settings(args):
    """The arguments over the defaults (an argument given as null keeps its default)."""
    return {**DEFAULTS, **{k: v for k, v in (args or {}).items() if v is not None}}


async def run(queue, args, calls, clock=time.monotonic):
    """The source's loop over ``calls`` (see :func:`_client_calls`); returns only when cancelled."""
    args = settings(args)
    coalescer = Coalescer(args["debounce"], args["max_delay"], clock)
    tracker = Tracker(args, coalescer)
    loop = asyncio.get_running_loop()
    inbox = asyncio.Queue()
    stop = threading.Event()

    def deliver(resource):
        return lambda kind, payload: loop.call_soon_threadsafe(inbox.put_nowait, (resource, kind, payload))

    threads = [threading.Thread(target=w.run, name=w.name, daemon=True) for w in watches(args, calls, deliver, stop)]
    for t in threads:
        t.start()
    try:
        while True:
            try:
                item = await asyncio.wait_for(inbox.get(), coalescer.next_wait())
                apply(tracker, *item)
            except asyncio.TimeoutError:
                pass
            for event in coalescer.due():
                await queue.put(event)
    finally:
        stop.set()


async def main(queue, args):
    """EDA's entry point."""
    args = settings(args)
    await run(queue, args, _client_calls(args))


if __name__ == "__main__":

    class _PrintQueue:
        async def put(self, event):
            print(json.dumps(event), flush=True)

    import sys

    asyncio.run(main(_PrintQueue(), {"kubeconfig": sys.argv[1] if len(sys.argv) > 1 else None}))
