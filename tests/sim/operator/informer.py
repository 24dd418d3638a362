"""Informer-style LIST+WATCH caches (one thread per resource), robust to API errors."""

from __future__ import annotations

import json
import logging
import threading
import time

from kubernetes import watch
from kubernetes.client.rest import ApiException

log = logging.getLogger("sim.informer")


class RawWatch(watch.Watch):
    """A Watch that hands back plain dicts (no model deserialisation: cheap at 1,000 nodes)."""

    def get_return_type(self, func):
        return None


class Informer:
    """Keeps {key: object-dict} for one resource; calls on_change() after every change."""

    def __init__(self, name: str, list_fn, on_change, namespaced: bool = False, **kwargs):
        self.name = name
        self.list_fn = list_fn
        self.kwargs = kwargs
        self.on_change = on_change
        self.namespaced = namespaced
        self.items: dict[str, dict] = {}
        self.lock = threading.Lock()
        self.synced = threading.Event()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name=f"informer-{name}", daemon=True)

    def key(self, obj: dict) -> str:
        md = obj["metadata"]
        return f"{md.get('namespace')}/{md['name']}" if self.namespaced else md["name"]

    def start(self) -> "Informer":
        self.thread.start()
        return self

    def snapshot(self) -> list[dict]:
        with self.lock:
            return list(self.items.values())

    def get(self, key: str) -> dict | None:
        with self.lock:
            return self.items.get(key)

    def _list(self) -> str:
        items: dict[str, dict] = {}
        cont = None
        rv = ""
        while True:
            resp = self.list_fn(_preload_content=False, limit=500, _continue=cont, **self.kwargs)
            data = json.loads(resp.data)
            for it in data.get("items") or []:
                items[self.key(it)] = it
            rv = data["metadata"].get("resourceVersion", "")
            cont = data["metadata"].get("continue")
            if not cont:
                break
        with self.lock:
            self.items = items
        return rv

    def _run(self) -> None:
        backoff = 0.5
        while not self.stop.is_set():
            try:
                rv = self._list()
                self.synced.set()
                self.on_change(self.name)
                backoff = 0.5
                w = RawWatch()
                for ev in w.stream(
                    self.list_fn, resource_version=rv, timeout_seconds=300, allow_watch_bookmarks=True, **self.kwargs
                ):
                    if self.stop.is_set():
                        w.stop()
                        return
                    typ, obj = ev["type"], ev["object"]
                    if typ == "BOOKMARK":
                        continue
                    if typ == "ERROR":
                        break
                    k = self.key(obj)
                    with self.lock:
                        if typ == "DELETED":
                            self.items.pop(k, None)
                        else:
                            self.items[k] = obj
                    self.on_change(self.name)
            except ApiException as exc:
                if exc.status == 404:  # the CRD is not installed yet
                    with self.lock:
                        self.items = {}
                    self.synced.set()
                else:
                    log.warning("%s: watch failed: HTTP %s %s", self.name, exc.status, exc.reason)
                time.sleep(backoff)
                backoff = min(backoff * 2, 5)
            except Exception as exc:  # connection resets, timeouts, decode errors
                log.warning("%s: watch error: %s: %s", self.name, type(exc).__name__, exc)
                time.sleep(backoff)
                backoff = min(backoff * 2, 5)
