"""The fleet_failure filter: the message a play fails with for a fleet validation summary, or an empty string."""

from ansible_collections.gpuops.gpu_operator.plugins.filter.fleet_failure import FilterModule
from ansible_collections.gpuops.gpu_operator.plugins.filter.fleet_summary import FilterModule as Summary

LABELS = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "T4", "nvidia.com/gpu.count": "1"}


def failure(summary, *args):
    return FilterModule().filters()["fleet_failure"](summary, *args)


def fleet(*broken):
    """gpu-0 passes; each of ``broken`` fails: ``driver`` (no NVML) or ``device-plugin`` (no GPU advertised)."""
    hosts, nodes = {}, {}
    for i, layer in enumerate(("ok",) + broken):
        name = "gpu-%d" % i
        hosts[name] = {"node_name": name, "pool": "p", "nvidia_gpu": {"available": layer != "driver", "gpu_count": 1}}
        alloc = 0 if layer == "device-plugin" else 1
        nodes[name] = {"allocatable": {"nvidia.com/gpu": alloc}, "operands": {}, "labels": LABELS, "ready": True}
    return Summary().filters()["fleet_summary"](hosts, nodes)


def test_a_passing_fleet_gives_an_empty_string():
    assert failure(fleet()) == ""
    assert failure(fleet(), "layers", ["driver"]) == ""


def test_by_default_any_failing_node_fails_the_play_naming_each_node_and_its_layer():
    assert failure(fleet("driver", "device-plugin")) == (
        "2 GPU node(s) failed validation: gpu-1 at layer driver; gpu-2 at layer device-plugin"
    )
    assert failure(fleet("driver"), "any") == "1 GPU node(s) failed validation: gpu-1 at layer driver"


def test_never_gives_an_empty_string_whatever_fails():
    assert failure(fleet("driver", "device-plugin"), "never") == ""


def test_layers_fails_only_for_the_nodes_failing_at_one_of_the_given_layers():
    summary = fleet("driver", "device-plugin")
    assert failure(summary, "layers", ["device-plugin", "toolkit"]) == (
        "1 GPU node(s) failed validation: gpu-2 at layer device-plugin"
    )
    assert failure(summary, "layers", ["monitoring"]) == ""


def test_layers_without_a_list_of_layers_fails_nothing():
    assert failure(fleet("driver"), "layers") == ""
