"""The canary_plan_lines filter: a canary upgrade plan as lines of text."""

from ansible_collections.gpuops.gpu_operator.plugins.filter.canary_plan_lines import FilterModule

PLAN = {
    "from": {"driver_version": "550.127.08", "chart_version": "v26.3.3"},
    "target": {"driver_version": "570.124.06", "chart_version": None},
    "mode": "driver",
    "resumed": False,
    "phase": "planned",
    "record": "gpu-operator/gpuops-canary-upgrade",
    "skip_label": "nvidia.com/gpu-driver-upgrade.skip",
    "waves": [
        {"name": "canary", "status": "proven", "taint": "gpuops.io/canary-upgrade=canary:NoSchedule", "nodes": ["n-0"]},
        {
            "name": "wave-1",
            "status": "pending",
            "taint": "gpuops.io/canary-upgrade=wave-1:NoSchedule",
            "nodes": ["n-1", "n-2"],
        },
    ],
    "unplanned": [],
    "excluded": ["n-9"],
    "gate": {"passed": True, "pdbs": [], "gpu_jobs": [], "failures": []},
}


def lines(plan, **kw):
    return FilterModule().filters()["canary_plan_lines"](plan, **kw)


def test_a_new_plan_reads_target_skip_label_waves_and_gate():
    assert lines(PLAN) == [
        "Canary upgrade to driver 570.124.06 (from driver 550.127.08 and chart v26.3.3; "
        "driver mode, new, record gpu-operator/gpuops-canary-upgrade)",
        "Every node not in the current wave carries nvidia.com/gpu-driver-upgrade.skip=true.",
        "canary [proven] taint gpuops.io/canary-upgrade=canary:NoSchedule, remove skip label, upgrade: n-0",
        "wave-1 [pending] taint gpuops.io/canary-upgrade=wave-1:NoSchedule, remove skip label, upgrade: n-1, n-2",
        "Not planned (keep the skip label): none",
        "Excluded: n-9",
        "Gate: passed; PDBs: none; GPU jobs: none",
    ]


def test_a_resumed_plan_names_its_phase():
    assert "; driver mode, resuming, phase waves, record" in lines(dict(PLAN, resumed=True, phase="waves"))[0]


def test_a_failed_gate_lists_pdbs_jobs_and_cuda_workloads_and_leaves_its_failures_to_the_failure_message():
    cuda = {
        "target_driver": "570.124.06",
        "workloads": [
            {"cuda": "12.4", "pod": "ns/a", "image": "cuda:12.4", "required_driver": "550.54.14", "ok": True},
            {"cuda": "12.9", "pod": "ns/b", "image": "cuda:12.9", "required_driver": "575.51.03", "ok": False},
            {"cuda": "12.2", "pod": "ns/c", "image": "cuda:12.2", "required_driver": "535.54.03", "ok": None},
        ],
        "unknown": [{"pod": "ns/d", "image": "mine:1"}],
    }
    gate = {
        "passed": False,
        "pdbs": [{"name": "ns/pdb-a"}, {"name": "ns/pdb-b"}],
        "gpu_jobs": [{"pod": "ns/job-0"}],
        "cuda": cuda,
        "failures": ["n-3 is in upgrade-failed"],
    }
    out = lines(dict(PLAN, unplanned=["n-7", "n-8"], gate=gate))
    assert out[4:] == [
        "Not planned (keep the skip label): n-7, n-8",
        "Excluded: n-9",
        "Gate: FAILED; PDBs: ns/pdb-a, ns/pdb-b; GPU jobs: ns/job-0",
        "CUDA 12.4: ns/a (cuda:12.4) needs driver >= 550.54.14, target 570.124.06: ok",
        "CUDA 12.9: ns/b (cuda:12.9) needs driver >= 575.51.03, target 570.124.06: too old",
        "CUDA 12.2: ns/c (cuda:12.2) needs driver >= 535.54.03, target 570.124.06: not compared",
        "unknown CUDA (info): ns/d (mine:1)",
    ]


def test_a_chart_only_upgrade_compares_against_an_unchanged_driver():
    cuda = {
        "target_driver": None,
        "workloads": [{"cuda": "12.4", "pod": "p", "image": "i", "required_driver": "550", "ok": None}],
    }
    out = lines(dict(PLAN, gate=dict(PLAN["gate"], cuda=cuda)))
    assert out[-1] == "CUDA 12.4: p (i) needs driver >= 550, target unchanged: not compared"


def test_the_disruption_reads_one_summary_then_one_line_per_node():
    disruption = {
        "release": "v26.7.0",
        "in_place": ["n-0"],
        "full": ["n-1"],
        "evicted_workloads": 1,
        "client_label": "nvidia.com/gpu.deploy.client",
        "nodes": [
            {"node": "n-0", "driver_restart": "in-place", "reason": "digest stays", "evicted": [], "clients": ["m/a"]},
            {"node": "n-1", "driver_restart": "full", "reason": "version", "evicted": ["ml/t"], "clients": []},
        ],
    }
    gate = dict(PLAN["gate"], passed=False, failures=["the plan evicts 1 GPU workload pod(s), more than ..."])
    out = lines(dict(PLAN, disruption=disruption, gate=gate))
    assert out[-3:] == [
        "Driver restart (operator v26.7.0): in place on n-0; full flow on n-1; 1 GPU workload pod(s) evicted",
        "n-0: driver restart in-place (digest stays); evicts none; nvidia.com/gpu.deploy.client pods: m/a",
        "n-1: driver restart full (version); evicts ml/t; nvidia.com/gpu.deploy.client pods: none",
    ]
    capped = lines(dict(PLAN, disruption=disruption, gate=gate), limit=1)
    assert capped[-2:] == [
        "n-0: driver restart in-place (digest stays); evicts none; nvidia.com/gpu.deploy.client pods: m/a",
        "  ... and 1 more node(s) (in the plan)",
    ]


def test_a_long_node_list_names_the_first_and_counts_the_rest():
    waves = [{"name": "wave-1", "status": "pending", "taint": "t", "nodes": ["n-%d" % i for i in range(25)]}]
    out = lines(dict(PLAN, waves=waves, unplanned=["u-%d" % i for i in range(12)]))
    assert any(line.endswith("upgrade: " + ", ".join("n-%d" % i for i in range(10)) + " and 15 more") for line in out)
    assert "Not planned (keep the skip label): " + ", ".join("u-%d" % i for i in range(10)) + " and 2 more" in out


def test_the_source_names_the_drivers_the_nodes_run_and_a_cluster_policy_driver_that_runs_nowhere():
    plan = dict(
        PLAN,
        **{
            "from": {
                "driver_version": "595.91.07",
                "chart_version": "v26.3.3",
                "running": {"550.127.05": 5, "570.1": 1},
            }
        },
    )
    assert lines(plan)[0].startswith(
        "Canary upgrade to driver 570.124.06 (from driver 550.127.05 on 5 node(s), 570.1 on 1 node(s); "
        "the ClusterPolicy names driver 595.91.07; chart v26.3.3; driver mode"
    )


def test_a_source_whose_nodes_report_no_driver_says_so_instead_of_naming_one():
    plan = dict(PLAN, **{"from": {"driver_version": "580.1", "chart_version": None, "running": {}}})
    assert "(from no driver version reported by the GPU nodes; the ClusterPolicy names driver 580.1; " in lines(plan)[0]
