"""The fleet_wait_line filter: one progress line per poll of a wait on the GPU nodes."""

from ansible_collections.gpuops.gpu_operator.plugins.filter.fleet_wait_line import FilterModule


def line(result, **kw):
    return FilterModule().filters()["fleet_wait_line"](result, **kw)


def ready(name):
    return {"name": name, "ready": True, "gpu": {"present": True}, "operands_ready": True, "operands": {}}


def creating(name):
    node = ready(name)
    node["operands_ready"] = False
    node["operands"] = {
        "device-plugin": {"phase": "Running", "ready": False, "waiting_reason": "ContainerCreating", "restarts": 0},
        "container-toolkit": {"phase": "Running", "ready": True},
        "cuda-validation": {"phase": "Succeeded", "ready": False},
    }
    return node


def cluster(*nodes):
    return {"nodes": {n["name"]: n for n in nodes}}


def test_the_line_counts_the_ready_nodes_and_names_what_the_others_wait_for():
    result = cluster(ready("a"), ready("b"), creating("c"))
    assert line(result, elapsed=20) == "20 s: 2/3 GPU nodes ready; waiting for c: device-plugin ContainerCreating"


def test_every_node_ready():
    assert line(cluster(ready("a"), ready("b"))) == "2/2 GPU nodes ready"


def test_other_reasons_a_node_is_not_ready():
    unlabelled = dict(ready("u"), gpu={"present": None}, operands_ready=False)
    missing = dict(ready("m"), operands_ready=False, operands_missing=["driver"])
    crashing = dict(
        ready("x"),
        operands_ready=False,
        operands={"driver": {"phase": "Running", "ready": False, "waiting_reason": "CrashLoopBackOff", "restarts": 4}},
    )
    down = dict(ready("d"), ready=False, operands_ready=False)
    assert line(cluster(unlabelled, missing, crashing, down), limit=4) == (
        "0/4 GPU nodes ready; waiting for d: node not Ready; m: no driver pod; u: not labelled by the operator yet; "
        "x: driver CrashLoopBackOff (4 restarts)"
    )


def test_at_most_limit_nodes_are_named():
    result = cluster(*[creating("n-%d" % i) for i in range(5)])
    assert line(result, limit=2).endswith("n-1: device-plugin ContainerCreating; 3 more node(s)")


def test_the_last_poll_says_the_wait_gave_up():
    assert line(cluster(creating("c")), elapsed=120, timeout=120, final=True) == (
        "120 s: 0/1 GPU nodes ready; waiting for c: device-plugin ContainerCreating - not waiting longer after 120 s;"
        " the checks below name what is wrong"
    )
    assert line(cluster(ready("a")), elapsed=120, timeout=120, final=True) == "120 s: 1/1 GPU nodes ready"


def test_a_failing_sandbox_is_named_and_when_every_waiting_node_is_stuck_the_line_says_the_wait_stops():
    stuck = creating("c")
    stuck["operands_stuck"] = True
    stuck["operands"]["device-plugin"]["sandbox_error"] = (
        'failed to get sandbox runtime: no runtime for "nvidia" is configured'
    )
    assert line(cluster(ready("a"), stuck), elapsed=10, timeout=120) == (
        '10 s: 1/2 GPU nodes ready; waiting for c: device-plugin ContainerCreating (FailedCreatePodSandBox: failed to '
        'get sandbox runtime: no runtime for "nvidia" is configured) - not waiting longer: 1 node(s) stuck; the checks '
        "below name what is wrong"
    )
    # one node still on its way: the wait goes on
    assert line(cluster(creating("b"), stuck), elapsed=10, timeout=120).endswith("is configured)")


def test_a_failed_skipped_or_empty_poll():
    assert line({"failed": True, "msg": "HTTP 403"}, elapsed=0) == "0 s: could not read the cluster: HTTP 403"
    assert line({"skipped": True}) == "not polled"
    assert line({"nodes": {}}) == "no GPU node found"
    assert line(None) == "could not read the cluster: no result"


def summarised(result, keep):
    """``result`` as gpu_cluster_info returns it with node_detail: ``node_summary`` of every node, ``nodes`` only
    those named in ``keep``."""
    summary = {
        name: {
            "operands_ready": node["operands_ready"],
            "problems": [] if node["operands_ready"] else ["operands-not-ready"],
        }
        for name, node in result["nodes"].items()
    }
    return {"nodes": {n: result["nodes"][n] for n in keep}, "node_summary": summary}


def test_a_result_with_detail_only_for_the_nodes_with_a_problem_gives_the_same_line():
    full = cluster(ready("a"), ready("b"), creating("c"))
    assert line(summarised(full, ["c"]), elapsed=20) == line(full, elapsed=20)
    assert line(summarised(full, ["c"])) == "2/3 GPU nodes ready; waiting for c: device-plugin ContainerCreating"


def test_without_node_detail_a_waiting_node_is_named_with_its_problem_codes():
    result = summarised(cluster(ready("a"), creating("c")), [])
    assert line(result) == "1/2 GPU nodes ready; waiting for c: operands-not-ready"


def test_the_default_fleet_shape_counts_every_node_from_the_totals():
    full = cluster(ready("a"), ready("b"), creating("c"))
    fleet = summarised(full, ["c"])
    fleet["node_summary"] = {"c": fleet["node_summary"]["c"]}
    fleet["totals"] = {"nodes": 3, "nodes_operands_ready": 2}
    assert (
        line(fleet, elapsed=20)
        == line(full, elapsed=20)
        == "20 s: 2/3 GPU nodes ready; waiting for c: device-plugin ContainerCreating"
    )
