"""Helpers for the tests that run the simulated GPU Operator (the ``gpu_operator`` fixture in
tests/integration/conftest.py returns an :class:`Op`); import as ``tests.integration.simop_helpers``."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
from pathlib import Path

from tests.integration import helpers
from tests.sim import testbed as tb
from tests.sim.operator import logic as L

REPO_ROOT = Path(__file__).resolve().parents[2]
NS = "gpu-operator"
GROUP, CP_VER, CP_PLURAL = "nvidia.com", "v1", "clusterpolicies"


def wait_for(pred, timeout=30.0, interval=0.2, what="condition"):
    """:func:`tests.integration.helpers.wait_for`, polling every 0.2 s by default (the simulated operator reacts
    within a fraction of a second)."""
    return helpers.wait_for(pred, timeout, interval, what)


@contextlib.contextmanager
def simulated_operator(state, kubeconfig, work, start_timeout=30):
    """The simulated GPU Operator and the bed's driver-upgrade controller on a test bed (``state``: its loaded
    tests.sim.testbed.State).

    Yields the directory the operator writes its state to (``dcgm-exporter.url``, ...): the bed's own when the bed
    already runs both, else ``work``, where the missing ones are started against ``kubeconfig`` and stopped when the
    block ends.
    """
    running = {n for n, _c, ok in state.check() if ok}
    procs = []
    try:
        if "upgrade-controller" not in running:
            procs.append(_start(tb.upgrade_controller_argv(tb.binary("upgrade-controller"), kubeconfig), work))
        if "gpu-operator-sim" in running:
            yield Path(state.dir)
            return
        argv = [sys.executable, "-m", "tests.sim.operator", "--kubeconfig", kubeconfig, "--state-dir", str(work)]
        procs.append(_start(argv, work))
        wait_for((work / "dcgm-exporter.url").exists, start_timeout, what="simulated operator start")
        yield work
    finally:
        for proc in procs:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()


def _start(argv, work):
    name = Path(argv[0]).name if argv[0] != sys.executable else "gpu-operator-sim"
    with open(work / f"{name}.log", "ab") as log:
        return subprocess.Popen(argv, cwd=REPO_ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


class Op:
    def __init__(self, bed, api, prof, helm_env, state_dir):
        from kubernetes import client

        self.bed, self.api, self.prof, self.helm_env, self.state_dir = bed, api, prof, helm_env, state_dir
        self.core = client.CoreV1Api(api)
        self.apps = client.AppsV1Api(api)
        self.custom = client.CustomObjectsApi(api)
        self.gpu_nodes = {n: p.gpu for p in prof.gpu_pools() for n in p.node_names() if p.gpu.count > 0}
        self.cpu_nodes = [n for p in prof.pools if p.gpu is None for n in p.node_names()]

    # helm ----------------------------------------------------------------------------------------
    def helm(self, *args, check=True, timeout=180):
        argv = [self.bed.helm, *args, "--kubeconfig", self.bed.kubeconfig]
        r = subprocess.run(argv, capture_output=True, text=True, env=self.helm_env, timeout=timeout, check=False)
        if check and r.returncode != 0:
            raise AssertionError(f"helm {' '.join(args)} failed: {r.stderr.strip()[-1500:]}")
        return r

    def install(self, version="v26.7.0", *sets):
        extra = [x for s in sets for x in ("--set", s)]
        return self.helm(
            "upgrade",
            "--install",
            "gpu-operator",
            "gpu-operator",
            "--repo",
            self.bed.chart_repo_url,
            "--version",
            version,
            "-n",
            NS,
            "--create-namespace",
            "--wait",
            "--timeout",
            "900s",
            *extra,
            timeout=960,
        )

    # reads ---------------------------------------------------------------------------------------
    def cp(self):
        return self.custom.get_cluster_custom_object(GROUP, CP_VER, CP_PLURAL, "cluster-policy")

    def cp_state(self):
        try:
            return (self.cp().get("status") or {}).get("state")
        except Exception:
            return None

    def node(self, name):
        return self.core.read_node(name)

    def alloc(self, name, res="nvidia.com/gpu"):
        return (self.node(name).status.allocatable or {}).get(res)

    def cap(self, name, res="nvidia.com/gpu"):
        return (self.node(name).status.capacity or {}).get(res)

    def pods(self, app=None, node=None, selector=None):
        sel = selector or (f"app={app}" if app else None)
        items = self.core.list_namespaced_pod(NS, label_selector=sel).items
        return [p for p in items if node is None or p.spec.node_name == node]

    def events(self, ns="default", reason=None, name=None):
        evs = self.core.list_namespaced_event(ns).items
        return [
            e
            for e in evs
            if (reason is None or e.reason == reason) and (name is None or e.involved_object.name == name)
        ]

    # writes --------------------------------------------------------------------------------------
    def annotate(self, node, **ann):
        self.core.patch_node(node, {"metadata": {"annotations": ann}})

    def label(self, node, **lab):
        self.core.patch_node(node, {"metadata": {"labels": lab}})

    def fault(self, node, value):
        self.core.patch_node(node, {"metadata": {"annotations": {"sim.gpuops.io/fault": value}}})

    def patch_cp(self, spec):
        self.custom.patch_cluster_custom_object(GROUP, CP_VER, CP_PLURAL, "cluster-policy", {"spec": spec})

    def healthy(self):
        """ClusterPolicy ready and every GPU node settled: its full GPU count advertised, schedulable, and no driver
        upgrade required or under way (a fresh install whose driver differs from the nodes' walks every node through
        the upgrade states, which cordon the node and delete its GPU pods)."""
        if self.cp_state() != "ready":
            return False
        driver_managed = (self.cp()["spec"].get("driver") or {}).get("enabled", True) is not False
        for name, gpu in self.gpu_nodes.items():
            node = self.node(name)
            labels = node.metadata.labels or {}
            if (node.status.allocatable or {}).get("nvidia.com/gpu") != str(gpu.count) or node.spec.unschedulable:
                return False
            state = labels.get(L.UPGRADE_STATE)
            # upgrade-required waits for a slot, then cordons; it stays (harmless) where no upgrade will run
            upgrades = (
                driver_managed and labels.get(L.DEPLOY + "driver") == "true" and labels.get(L.UPGRADE_SKIP) != "true"
            )
            if state in L.IN_PROGRESS or (state == "upgrade-required" and upgrades):
                return False
        return True

    def wait_healthy(self, timeout=90):
        wait_for(self.healthy, timeout, what="ClusterPolicy ready, full allocatable, no driver upgrade under way")

    def driver_daemonsets(self):
        """The driver DaemonSets, found as NVIDIA's upgrade controller finds them."""
        selector = "app.kubernetes.io/component=nvidia-driver"
        return self.apps.list_namespaced_daemon_set(NS, label_selector=selector).items

    def driver_generations(self):
        """``{name: generation}`` of the driver DaemonSets: pass it to wait_settled() after a change."""
        return {ds.metadata.name: ds.metadata.generation for ds in self.driver_daemonsets()}

    def drivers_current(self, since=None):
        """Every driver DaemonSet runs its latest pod template, ready, on every node it wants (an OnDelete DaemonSet:
        NVIDIA's upgrade controller replaces the pods, cordoning each node on the way); with ``since``
        (driver_generations() before a change), only once each has a newer template than then."""
        for ds in self.driver_daemonsets():
            if since and ds.metadata.generation <= since.get(ds.metadata.name, 0):
                return False
            if not helpers.rolled_out(ds):
                return False
        return True

    def wait_settled(self, since, timeout=300):
        """After a change of the operands' pod templates (spec.daemonsets), made when the driver DaemonSets were at
        ``since`` (driver_generations()): the simulated operator has rendered it, the driver restart it starts on every
        node has finished, and the cluster is healthy (a node mid-upgrade is cordoned, which no spec should race)."""
        wait_for(
            lambda: self.drivers_current(since) and self.healthy(),
            timeout,
            what="every driver pod on its DaemonSet's new template, the cluster healthy",
        )


class NodeRecorder:
    """Watches nodes in a thread and records every value of one label per node (in order)."""

    def __init__(self, api, label):
        from kubernetes import client, watch

        self.label, self.seq, self.snapshots = label, {}, []
        self.core = client.CoreV1Api(api)
        self.w = watch.Watch()
        self.current = {}
        self.listed = threading.Event()
        self.t = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        try:
            self._watch()
        except Exception:  # the stream is closed by stop()
            pass

    def _record(self, n):
        v = (n.metadata.labels or {}).get(self.label)
        s = self.seq.setdefault(n.metadata.name, [])
        if not s or s[-1] != v:
            s.append(v)
        self.current[n.metadata.name] = (v, bool(n.spec.unschedulable))
        self.snapshots.append(dict(self.current))

    def _watch(self):
        listed = self.core.list_node()
        for n in listed.items:
            self._record(n)
        self.listed.set()
        for ev in self.w.stream(
            self.core.list_node, resource_version=listed.metadata.resource_version, timeout_seconds=300
        ):
            self._record(ev["object"])

    def start(self):
        """Start watching; returns once the nodes are listed (later changes arrive through the watch)."""
        self.t.start()
        if not self.listed.wait(30):
            raise AssertionError("NodeRecorder: the nodes could not be listed within 30 s")
        return self

    def stop(self):
        self.w.stop()
