"""Benchmark: a canary upgrade of 100 GPU nodes in waves vs the simulator's floor, and the abort latency.

* floor: the bed's upgrade controller (NVIDIA's k8s-operator-libs pkg/upgrade, tests/sim/upgrade-controller) alone
  moving every GPU node to a new driver at once
  (ClusterPolicy ``spec.driver.version`` patched, ``maxParallelUpgrades: 0``, ``maxUnavailable: 100%``, no skip
  labels) until every node is ``upgrade-done`` on it. No canary procedure can beat it.
* floor in waves: the same controller alone upgrading the canary's waves one after another - every GPU node held
  by the skip label, the version patched, then each wave's skip labels removed (``WRITERS`` nodes at a time) once
  the wave before is ``upgrade-done``. What waves cost by themselves: the controller's own latency is paid once per
  wave. ``canary / floor in waves`` is what the canary procedure adds (taints, proof, record, waiting).
* canary: ``canary.run.Canary`` in-process (the module's code path without Ansible's process start-up) - plan,
  prepare, then per wave ``run_wave`` (taint, release, wait, cluster-side proof) and ``finish_wave``; waves
  ``[canary, *--waves]``. Printed as ``canary / floor``; the extra is the waves' serialisation, the proof and the
  waiting. Each phase is printed with its seconds and API requests: plan, prepare, and per wave ``take`` (taint,
  release), ``upgrade`` (waiting for the controller), ``proof`` (its reads, renewing held operand pods, the
  cluster-side proof) and ``finish``.
* abort latency: a new target with ``upgrade-failed`` injected on a canary node; from the moment a watcher sees
  the node enter ``upgrade-failed`` to the moment ``run_wave`` raises ``CanaryAbort`` (after its abort writes).
  Printed against ``--poll`` (one poll is the expected latency).

The test bed is a temporary one (two pools of ``--nodes``/2 GPU nodes, the simulated operator, chart v26.7.0)
unless ``--state-dir`` names a running bed that already has the chart installed.

    .venv/bin/python bench/canary_upgrade.py [--nodes 100] [--waves 25% 100%] [--poll 1.0] [--repeat 1]

Prints figures; never run from the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

# _common (bench/_common.py) first: it makes the collection and tests.* importable
from _common import ROOT, K8sClient, load_configuration

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary import wave as wave_step
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.errors import CanaryAbort
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.options import CanaryOptions
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.run import Canary
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.session import WRITERS

STATE = "nvidia.com/gpu-driver-upgrade-state"
SKIP = "nvidia.com/gpu-driver-upgrade.skip"
DRIVER = "nvidia.com/cuda.driver-version.full"
NS = "gpu-operator"
CP = "/apis/nvidia.com/v1/clusterpolicies/cluster-policy"
MERGE = "application/merge-patch+json"

PROFILE = """name: canary-bench
description: canary upgrade benchmark ({n} GPU nodes in two pools)
operator: simulated
pools:
  - {{name: cp, role: control-plane, count: 1, cpu: "8", memory: 32Gi}}
  - name: h100
    count: {h}
    gpu: {{product: NVIDIA-H100-80GB-HBM3, count: 8, memory_mib: 81559}}
    cpu: "192"
    memory: 2Ti
    os: {{id: ubuntu, version_id: "22.04"}}
    kernel: 5.15.0-105-generic
  - name: a100
    count: {a}
    gpu: {{product: NVIDIA-A100-SXM4-80GB, count: 8, memory_mib: 81920}}
    cpu: "128"
    memory: 1Ti
    os: {{id: ubuntu, version_id: "22.04"}}
    kernel: 5.15.0-105-generic
"""


def sim(*args, timeout=1800):
    return subprocess.run(
        [sys.executable, "-m", "tests.sim", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


class Bed:
    def __init__(self, state_dir):
        self.state = json.loads((Path(state_dir) / "state.json").read_text())
        self.kubeconfig = self.state["kubeconfig"]
        self.client = K8sClient(load_configuration(kubeconfig=self.kubeconfig), timeout=60)

    def nodes(self):
        return [
            n
            for n in self.client.list_core("nodes", page_size=2000)
            if (n["metadata"].get("labels") or {}).get("feature.node.kubernetes.io/pci-10de.present") == "true"
        ]

    def patch(self, path, body):
        self.client.send_typed("PATCH", path, body, content_type=MERGE)

    def label(self, name, labels):
        self.patch("/api/v1/nodes/" + name, {"metadata": {"labels": labels}})

    def all_on(self, version, names=None):
        """Whether every GPU node (or every one of ``names``) is ``upgrade-done`` on ``version``."""
        nodes = [n for n in self.nodes() if names is None or n["metadata"]["name"] in names]
        return all(
            n["metadata"]["labels"].get(DRIVER) == version and n["metadata"]["labels"].get(STATE) == "upgrade-done"
            for n in nodes
        )

    def wait(self, pred, timeout, what, interval=0.2):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if pred():
                return
            time.sleep(interval)
        raise SystemExit("timed out after %ss waiting for %s" % (timeout, what))

    def install(self, work):
        env = dict(
            os.environ,
            HELM_CACHE_HOME=str(work / "c"),
            HELM_CONFIG_HOME=str(work / "g"),
            HELM_DATA_HOME=str(work / "d"),
        )
        r = subprocess.run(
            [self.state["helm"], "upgrade", "--install", "gpu-operator", "gpu-operator", "--repo",
             self.state["chart_repo_url"], "--version", "v26.7.0", "-n", NS, "--create-namespace", "--wait",
             "--timeout", "1200s", "--kubeconfig", self.kubeconfig],
            capture_output=True, text=True, env=env, timeout=1300, check=False,
        )  # fmt: skip
        if r.returncode:
            raise SystemExit("helm install failed: " + r.stderr[-2000:])

    def cp_ready(self):
        cp = self.client.get_or_none(CP)
        return bool(cp) and (cp.get("status") or {}).get("state") == "ready"

    def clear(self):
        """No canary leftovers: record, skip labels, taints, annotations, faults."""
        self.client.send(
            "DELETE", "/api/v1/namespaces/%s/configmaps/gpuops-canary-upgrade" % NS, accept_statuses=(404,)
        )
        for n in self.nodes():
            md = n["metadata"]
            taints = [
                t for t in (n.get("spec") or {}).get("taints") or [] if t.get("key") != "gpuops.io/canary-upgrade"
            ]
            labels = {SKIP: None}
            if md["labels"].get(STATE) == "upgrade-failed":
                labels[STATE] = "upgrade-required"
            self.patch(
                "/api/v1/nodes/" + md["name"],
                {
                    "metadata": {
                        "labels": labels,
                        "annotations": {"sim.gpuops.io/fault": None, "gpuops.io/canary-upgrade-failed": None},
                    },
                    "spec": {"taints": taints or None},
                },
            )


POLICY = {"autoUpgrade": True, "maxParallelUpgrades": 0, "maxUnavailable": "100%"}


def release_waves(bed, version, waves):
    """The controller alone, wave after wave (see the module docstring); the seconds from the version's patch."""
    members = [name for wave in waves for name in wave]
    with ThreadPoolExecutor(max_workers=WRITERS) as pool:
        list(pool.map(lambda name: bed.label(name, {SKIP: "true"}), members))
        t0 = time.monotonic()
        bed.patch(CP, {"spec": {"driver": {"version": version, "upgradePolicy": POLICY}}})
        for wave in waves:
            list(pool.map(lambda name: bed.label(name, {SKIP: None}), wave))
            bed.wait(lambda w=wave: bed.all_on(version, w), 1800, "%d nodes on %s" % (len(wave), version), 0.1)
    return time.monotonic() - t0


def floor(bed, version):
    t0 = time.monotonic()
    bed.patch(CP, {"spec": {"driver": {"version": version, "upgradePolicy": POLICY}}})
    bed.wait(lambda: bed.all_on(version), 1800, "every node on %s" % version)
    return time.monotonic() - t0


class Phases:
    """Seconds and API requests per phase of a canary run, ``(name, seconds, requests)`` in order."""

    def __init__(self, client):
        self.client = client
        self.rows = []

    def timed(self, name, call, *args, **kwargs):
        t0, r0 = time.monotonic(), self.client.requests
        try:
            return call(*args, **kwargs)
        finally:
            self.rows.append((name, time.monotonic() - t0, self.client.requests - r0))

    def wrap(self, name, call):
        return lambda *args, **kwargs: self.timed(name, call, *args, **kwargs)


def canary_run(bed, version, canary, waves, poll):
    """The canary run's seconds and its phases; the wave steps' waits are timed apart from what is left of
    ``run_wave`` (``take``: taint and release)."""
    c = Canary(bed.client, options=CanaryOptions(poll_interval=poll))
    phases = Phases(bed.client)
    saved = {name: getattr(wave_step, name) for name in ("wait_upgraded", "prove_wave")}
    for name, label in (("wait_upgraded", "upgrade"), ("prove_wave", "proof")):
        setattr(wave_step, name, phases.wrap(label, saved[name]))
    t0 = time.monotonic()
    try:
        target = CanaryOptions(driver_version=version, canary_nodes=canary, waves=waves)
        _plan, record, nodes, cp = phases.timed("plan", c.plan, target)
        phases.timed("prepare", c.prepare, record, nodes, cp, POLICY, hold_operands=True)
        for wave in record["waves"]:
            start = len(phases.rows)
            opts = {"policy": "none", "wave_timeout": 1800, "proof_timeout": 300}
            phases.timed("run_wave", c.run_wave, record, wave["index"], opts)
            inner = phases.rows[start:-1]
            _name, secs, reqs = phases.rows.pop()
            rows = [("take", secs - sum(r[1] for r in inner), reqs - sum(r[2] for r in inner))] + inner
            phases.rows[start:] = [("%s %s" % (wave["name"], n), s, r) for n, s, r in rows]
            phases.timed("%s finish" % wave["name"], c.finish_wave, record, wave["index"], True)
    finally:
        for name, call in saved.items():
            setattr(wave_step, name, call)
    return time.monotonic() - t0, phases.rows


def abort_latency(bed, version, canary, poll):
    bed.patch("/api/v1/nodes/" + canary[0], {"metadata": {"annotations": {"sim.gpuops.io/fault": "upgrade-failed"}}})
    seen = {}
    stop = threading.Event()
    watcher = K8sClient(load_configuration(kubeconfig=bed.kubeconfig), timeout=30)

    def watch():
        while not stop.is_set():
            node = watcher.get("/api/v1/nodes/" + canary[0])
            if node["metadata"]["labels"].get(STATE) == "upgrade-failed":
                seen.setdefault("t", time.monotonic())
                return
            time.sleep(0.02)

    th = threading.Thread(target=watch, daemon=True)
    th.start()
    c = Canary(bed.client, options=CanaryOptions(poll_interval=poll))
    _plan, record, nodes, cp = c.plan(CanaryOptions(driver_version=version, canary_nodes=canary))
    c.prepare(record, nodes, cp, POLICY, hold_operands=True)
    stopped = None
    try:
        c.run_wave(record, 0, {"policy": "none", "wave_timeout": 600})
    except CanaryAbort:
        stopped = time.monotonic()
    if stopped is None:
        raise SystemExit("the injected upgrade-failed did not abort the canary")
    stop.set()
    th.join(5)
    if "t" not in seen:
        raise SystemExit("the watcher never saw upgrade-failed")
    return stopped - seen["t"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--waves", nargs="+", default=["25%", "100%"])
    ap.add_argument("--poll", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--state-dir")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="canary-bench-"))
    state_dir = args.state_dir
    if not state_dir:
        state_dir = str(tmp / "bed")
        prof = tmp / "canary-bench.yml"
        h = args.nodes // 2
        prof.write_text(PROFILE.format(n=args.nodes, h=h, a=args.nodes - h))
        t0 = time.monotonic()
        r = sim("up", "--profile", str(prof), "--state-dir", state_dir)
        if r.returncode:
            raise SystemExit("test bed did not come up: " + r.stderr[-2000:])
        print("test bed: %d GPU nodes up in %.1fs" % (args.nodes, time.monotonic() - t0))
    try:
        bed = Bed(state_dir)
        if not bed.cp_ready():
            t0 = time.monotonic()
            bed.install(tmp)
            bed.wait(bed.cp_ready, 1800, "ClusterPolicy ready", interval=1)
            print("chart v26.7.0 installed and ready in %.1fs" % (time.monotonic() - t0))
        names = sorted(n["metadata"]["name"] for n in bed.nodes())
        canary = [next(n for n in names if n.startswith("a100")), next(n for n in names if n.startswith("h100"))]
        floors, waved, runs, lat = [], [], [], []
        for i in range(args.repeat):
            bed.clear()
            floors.append(floor(bed, "611.%d.1" % i))
            waves = [
                w["nodes"]
                for w in Canary(bed.client).plan(
                    CanaryOptions(driver_version="611.%d.4" % i, canary_nodes=canary, waves=args.waves)
                )[1]["waves"]
            ]
            waved.append(release_waves(bed, "611.%d.4" % i, waves))
            print(
                "  run %d floor %.1fs, in waves (%s nodes) %.1fs"
                % (i + 1, floors[-1], "+".join(str(len(w)) for w in waves), waved[-1])
            )
            t, rows = canary_run(bed, "611.%d.2" % i, canary, args.waves, args.poll)
            runs.append(t)
            for name, secs, reqs in rows:
                print("  run %d %-18s %6.2fs %4d requests" % (i + 1, name, secs, reqs))
            print("  run %d: %.1fs, %d API requests" % (i + 1, t, sum(r[2] for r in rows)))
            lat.append(abort_latency(bed, "611.%d.3" % i, canary, args.poll))
            bed.clear()
            bed.wait(lambda v="611.%d.3" % i: bed.all_on(v), 900, "recovery")
        f, w, c = statistics.median(floors), statistics.median(waved), statistics.median(runs)
        a = statistics.median(lat)
        print("floor (controller alone, all %d nodes at once): %.1fs (median of %d)" % (args.nodes, f, len(floors)))
        print("floor in waves (controller alone, the canary's waves one after another): %.1fs (median)" % w)
        print("canary upgrade (canary + waves %s): %.1fs (median)" % (" ".join(args.waves), c))
        print(
            "canary / floor = %.2fx; floor in waves / floor = %.2fx; canary / floor in waves = %.2fx"
            % (c / f, w / f, c / w)
        )
        print("abort latency: %.2fs = %.2f polls of %.1fs (median)" % (a, a / args.poll, args.poll))
    finally:
        if not args.state_dir:
            sim("down", "--state-dir", state_dir)


if __name__ == "__main__":
    main()
