"""Benchmark: admission on join through Event-Driven Ansible, and what the gpu_nodes event source costs the API server.

Two questions, each on a test bed of its own (docs/eda.md records the figures):

* **latency** (profile `ci`, the simulated GPU Operator): the time from a GPU node's creation to its admission (the
  admission record says `admitted` and the taint is gone) through the real ansible-rulebook running the
  gpu_node_admission rulebook, against the floor - the same admission path (`ansible-playbook
  gpuops.gpu_operator.admit_node -e gpuops_node=...`) started by hand the moment the node is created. It prints
  both, the time to the hold (the taint on the node), and `eda / floor`. The difference is the source's debounce
  (`--debounce`, 3 s here; 10 s by default), the event's way through the rules engine and ansible-runner's start.
* **requests** (profile `scale-1000`: 1,000 idle kwok GPU nodes): the source's API requests, counted in the API
  server's audit log by its User-Agent: the start (LISTs, watches) and then a window of `--window` seconds with
  nothing changing. The window is far shorter than an hour and than the watch's default `timeoutSeconds` (300 s),
  so the source runs with `--watch-timeout` (30 s) for it: the requests per hour are extrapolated from the
  requests per watch cycle measured in the window, at the default timeout (3600 / 300 cycles an hour), and, for
  comparison, for a poller that LISTs the same nodes every 60 s (the floor a schedule costs).

    .venv/bin/python bench/eda_admission.py [--only latency|requests] [--latency-state-dir DIR]
                                            [--requests-state-dir DIR] [--repeat 2] [--window 120]

Without a state dir it starts each bed in a temporary directory and stops it afterwards. Prints figures; never run
from the test suite.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

# _common (bench/_common.py) first: it makes the collection and tests.* importable
from _common import ROOT, scale_testbed

from tests.integration.eda.eda_helpers import Rulebook, audit_mark, sim, source_requests
from tests.integration.simop_helpers import NS, Op, simulated_operator, wait_for
from tests.sim import profiles
from tests.sim import testbed as tb

KEY = "gpuops.io/unvalidated"
RECORD = "gpuops.io/admission"
SOURCE = ROOT / "extensions" / "eda" / "plugins" / "event_source" / "gpu_nodes.py"


class Bed:
    def __init__(self, state):
        d = state.data
        self.kubeconfig, self.chart_repo_url, self.helm = d["kubeconfig"], d["chart_repo_url"], d["helm"]


def _admitted(op, node):
    n = op.node(node)
    record = json.loads((n.metadata.annotations or {}).get(RECORD) or "{}")
    return record.get("state") == "admitted" and not any(t.key == KEY for t in n.spec.taints or [])


def _held(op, node):
    return any(t.key == KEY for t in op.node(node).spec.taints or [])


def _join(state_dir):
    r = sim(state_dir, "join", "t4")
    if r.returncode:
        raise SystemExit("join failed: " + r.stderr[-2000:])
    return r.stdout.strip(), time.monotonic()


def _timed_admission(op, node, created, timeout=600):
    """(seconds to the hold, seconds to the admission) from ``created``, polled every 0.2 s (a hold shorter than a
    poll is not seen: its time is then the admission's)."""
    held = None
    deadline = created + timeout
    while time.monotonic() < deadline:
        if held is None and _held(op, node):
            held = time.monotonic() - created
        if _admitted(op, node):
            admitted = time.monotonic() - created
            return (admitted if held is None else held), admitted
        time.sleep(0.2)
    raise SystemExit("timed out after %ss waiting for %s to be admitted" % (timeout, node))


def latency(state_dir, repeat, debounce):
    from kubernetes import config

    state = tb.State(Path(state_dir)).load()
    bed = Bed(state)
    api = config.new_client_from_config(config_file=bed.kubeconfig)
    prof = profiles.load(state.data.get("profile_source") or state.data["profile"])
    work = Path(tempfile.mkdtemp(prefix="gpuops-eda-bench-"))
    joined = []
    with simulated_operator(state, bed.kubeconfig, work, start_timeout=60):
        helm_env = {
            **os.environ,
            **{k: str(work / k.lower()) for k in ("HELM_CACHE_HOME", "HELM_CONFIG_HOME", "HELM_DATA_HOME")},
        }
        op = Op(bed, api, prof, helm_env, work)
        op.install()
        op.wait_healthy(timeout=300)
        tolerations = (op.cp()["spec"].get("daemonsets") or {}).get("tolerations") or []
        op.patch_cp({"daemonsets": {"tolerations": [*tolerations, {"key": KEY, "operator": "Exists"}]}})
        rb = Rulebook(state_dir, work, debounce=debounce)
        rb.expect("t4", 2 * repeat)
        floors, edas = [], []
        try:
            for i in range(repeat):  # the floor: the playbook started by hand as the node is created
                node, created = _join(state_dir)
                joined.append(node)
                run = rb.playbook("admit_node", "-e", "gpuops_node=" + node)
                if run.returncode or not _admitted(op, node):
                    raise SystemExit("admit_node did not admit %s: %s" % (node, run.stdout[-3000:]))
                floors.append(time.monotonic() - created)
                print("  floor run %d (%s): admitted after %.1fs" % (i + 1, node, floors[-1]))
            mark = audit_mark(state.data["audit_log"])
            rb.start()
            wait_for(lambda: rb.watching(mark), 120, 0.5, what="the gpu_nodes source watching the nodes")
            for i in range(repeat):
                node, created = _join(state_dir)
                joined.append(node)
                edas.append(_timed_admission(op, node, created))
                print("  eda run %d (%s): held after %.1fs, admitted after %.1fs" % (i + 1, node, *edas[-1]))
        finally:
            rb.stop()
            for _node in joined:
                sim(state_dir, "leave", "t4")
            op.helm("uninstall", "gpu-operator", "-n", NS, "--wait", check=False)
    f = statistics.median(floors)
    e = statistics.median(a for _h, a in edas)
    h = statistics.median(hh for hh, _a in edas)
    print("latency (profile ci, %d runs each, medians; debounce %ss):" % (repeat, debounce))
    print("  floor - admit_node started by hand at the node's creation: admitted after %.1fs" % f)
    print("  eda   - ansible-rulebook + gpu_nodes source: held after %.1fs, admitted after %.1fs" % (h, e))
    print("  eda / floor = %.2fx (%+.1fs)" % (e / f, e - f))


def _watches(audit, mark):
    return sum(1 for e in source_requests(audit, mark) if e.get("verb") == "watch")


def requests(state_dir, window, watch_timeout):
    spec = importlib.util.spec_from_file_location("gpu_nodes_source", SOURCE)
    src = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(src)
    state = tb.State(Path(state_dir)).load()
    audit = state.data["audit_log"]
    prof = profiles.load(state.data.get("profile_source") or state.data["profile"])
    gpu_nodes = sum(p.count for p in prof.gpu_pools())
    args = src.settings({"kubeconfig": state.data["kubeconfig"], "watch_timeout": watch_timeout, "initial": "none"})
    resources = ["nodes", "events"] if args["watch_events"] else ["nodes"]
    emitted = []

    class Queue:
        async def put(self, event):
            emitted.append(event)

    async def measure():
        mark = audit_mark(audit)
        task = asyncio.create_task(src.run(Queue(), args, src._client_calls(args)))
        deadline = time.monotonic() + 120
        while _watches(audit, mark) < len(resources):  # the start: every LIST done, every watch open
            if time.monotonic() > deadline:
                raise SystemExit("the source did not open its watches in 120 s")
            await asyncio.sleep(0.2)
        start = source_requests(audit, mark)
        mark, t0 = audit_mark(audit), time.monotonic()
        await asyncio.sleep(window)
        steady, elapsed = source_requests(audit, mark), time.monotonic() - t0
        task.cancel()
        return start, steady, elapsed

    start, steady, elapsed = asyncio.run(measure())
    per_cycle = len(steady) * watch_timeout / elapsed
    per_hour = per_cycle * 3600 / src.DEFAULTS["watch_timeout"]
    pages = -(-gpu_nodes // 500)
    kinds = sorted({"%s %s" % (e["verb"], e["objectRef"].get("resource")) for e in start})
    print(
        "requests (profile scale-1000, %d GPU nodes, idle; source watches %s):" % (gpu_nodes, " and ".join(resources))
    )
    print("  start: %d requests (%s)" % (len(start), ", ".join(kinds)))
    print(
        "  window: %d requests in %.0fs with watch timeout %ds: %.1f per watch cycle, %d events emitted"
        % (len(steady), elapsed, watch_timeout, per_cycle, len(emitted))
    )
    print(
        "  extrapolated at the default watch timeout (%ds): %.0f requests per hour"
        % (src.DEFAULTS["watch_timeout"], per_hour)
    )
    print("  a 60 s poller's LISTs of the same nodes: %d requests per hour (%d pages of 500)" % (60 * pages, pages))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=("latency", "requests"))
    ap.add_argument("--latency-state-dir", help="a running `ci` test bed")
    ap.add_argument("--requests-state-dir", help="a running `scale-1000` test bed")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--debounce", type=float, default=3)
    ap.add_argument("--window", type=float, default=120)
    ap.add_argument("--watch-timeout", type=int, default=30)
    opts = ap.parse_args()
    if opts.only != "requests":
        with scale_testbed(opts.latency_state_dir, profile="ci") as state_dir:
            latency(state_dir, opts.repeat, opts.debounce)
    if opts.only != "latency":
        with scale_testbed(opts.requests_state_dir) as state_dir:
            requests(state_dir, opts.window, opts.watch_timeout)


if __name__ == "__main__":
    main()
