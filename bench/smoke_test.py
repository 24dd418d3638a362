"""Benchmark: gpu_smoke_test on 1,000 GPU nodes against the time the simulator needs to run 1,000 bare pods.

* floor: the same 1,000 pods (one per GPU node, as gpu_smoke_test would build them) created from 16 threads,
  a LIST of them every 0.5 s until kwok has run every one to completion (label gpuops.io/smoke-test=true:
  Running, then Succeeded after about a second), then deleted from 16 threads. No log reads, no verdicts.
* gpu_smoke_test: the module's SmokeRun in-process (same code path as the module, without Ansible's process
  start-up), every node at once (concurrency 1000), poll 0.5 s, its default 4 request threads; it also reads
  every pod's log and waits until every pod is gone.

Both go through the collection's _clients.k8s.K8sClient as the least-privilege identity. Runs on the `scale-1000` test
bed (1,000 GPU nodes; its `up` sets nvidia.com/gpu capacity since the profile runs no operator).

    .venv/bin/python bench/smoke_test.py [--state-dir DIR] [--repeat 2] [--nodes 1000]

Without --state-dir it starts `python -m tests.sim up --profile scale-1000` in a temporary directory and stops it
afterwards. Prints figures; never run from the test suite.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

# _common (bench/_common.py) first: it makes the collection and tests.* importable
from _common import new_client, parser, scale_testbed

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.smoke import (
    SmokeRun,
    pod_spec,
    run_selector,
    select_nodes,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.smoke_options import SmokeOptions

NAMESPACE = "default"
KWOK_LOG = "ran under kwok"


def gpu_nodes(kubeconfig, limit):
    return select_nodes(new_client(kubeconfig).list_core("nodes", page_size=2000))[:limit]


POD = SmokeOptions("nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0", timeout=300, namespace=NAMESPACE)


def make_pod(run_id, node):
    return pod_spec(run_id, node, POD)


def floor(kubeconfig, nodes):
    c = new_client(kubeconfig)
    run_id = "floor%03d" % (int(time.time()) % 1000)
    pods = [make_pod(run_id, n) for n in nodes]
    t0 = time.perf_counter()
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda p: c.create_pod(NAMESPACE, p), pods))
    path = "/api/v1/namespaces/%s/pods" % NAMESPACE
    while True:
        time.sleep(0.5)
        items = c.list_all(path, label_selector=run_selector(run_id), page_size=2000)[0]
        if len(items) == len(pods) and all(p["status"].get("phase") == "Succeeded" for p in items):
            break
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda p: c.delete_pod(NAMESPACE, p["metadata"]["name"]), pods))
    secs = time.perf_counter() - t0
    return secs, c.requests, len(pods)


def module_run(kubeconfig, nodes):
    c = new_client(kubeconfig)
    run = SmokeRun(c, replace(POD, concurrency=len(nodes), poll_interval=0.5, expected_output=KWOK_LOG))
    t0 = time.perf_counter()
    results = run.run(nodes)
    secs = time.perf_counter() - t0
    passed = sum(1 for r in results.values() if r["status"] == "passed")
    if passed != len(nodes) or run.leftovers:
        raise RuntimeError("smoke run: %d of %d passed, leftovers %s" % (passed, len(nodes), run.leftovers[:5]))
    return secs, c.requests, passed


def main():
    ap = parser(__doc__)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--nodes", type=int, default=1000)
    opts = ap.parse_args()

    with scale_testbed(opts.state_dir) as state_dir:
        state = json.loads(Path(state_dir, "state.json").read_text())
        sa = state["sa_kubeconfig"]
        nodes = gpu_nodes(sa, opts.nodes)
        print(
            "profile %s: %d GPU nodes, one smoke pod each; best of %d interleaved runs; identity: least privilege"
            % (state.get("profile"), len(nodes), opts.repeat),
            flush=True,
        )
        best = {}
        for _unused in range(opts.repeat):
            for name, fn in (("bare pods (floor)", floor), ("gpu_smoke_test", module_run)):
                secs, reqs, count = fn(sa, nodes)
                print("  %-20s %8.2f s %6d requests %5d pods" % (name, secs, reqs, count), flush=True)
                if name not in best or secs < best[name][0]:
                    best[name] = (secs, reqs, count)
        base, mod = best["bare pods (floor)"], best["gpu_smoke_test"]
        print("\n%-22s %9s %9s %10s" % ("method", "seconds", "requests", "vs floor"))
        for name, (secs, reqs, _count) in best.items():
            print("%-22s %9.2f %9d %9.2fx" % (name, secs, reqs, secs / base[0]))
        ratio = mod[0] / base[0]
        print(
            "\ngpu_smoke_test / bare-pod floor = %.2fx at %d nodes  (target <= 2x: %s)"
            % (ratio, len(nodes), "PASS" if ratio <= 2 else "FAIL")
        )


if __name__ == "__main__":
    main()
