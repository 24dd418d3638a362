"""`python -m tests.sim join|leave`: the taints a joining node registers with, and the refusals that name the fix."""

from __future__ import annotations

import json

import pytest

from tests.sim import join
from tests.sim.testbed import TestbedError as BedError


@pytest.mark.parametrize(
    ("text", "taint"),
    [
        ("gpuops.io/unvalidated:NoSchedule", {"key": "gpuops.io/unvalidated", "effect": "NoSchedule"}),
        ("dedicated=gpu:NoExecute", {"key": "dedicated", "value": "gpu", "effect": "NoExecute"}),
    ],
)
def test_a_taint_is_key_value_and_effect_as_kubelet_registers_it(text, taint):
    assert join._parse_taint(text) == taint


@pytest.mark.parametrize("text", ["gpuops.io/unvalidated", "k:NoSchedul", ":NoSchedule"])
def test_a_malformed_taint_is_refused_with_its_form(text):
    with pytest.raises(BedError, match=r"--taint must be KEY\[=VALUE\]:EFFECT"):
        join._parse_taint(text)


def test_joining_without_a_bed_says_to_start_one(tmp_path):
    with pytest.raises(BedError, match="run `python -m tests.sim up` first"):
        join.join(tmp_path, "t4")


def test_an_unknown_pool_and_a_pool_nobody_joined_are_refused_naming_them(tmp_path):
    (tmp_path / "state.json").write_text(json.dumps({"profile": "ci"}))
    with pytest.raises(BedError, match=r"profile ci has no GPU pool 'cpu' \(GPU pools: h100, t4\)"):
        join.join(tmp_path, "cpu")
    with pytest.raises(BedError, match="no node joined pool t4 since `up`"):
        join.leave(tmp_path, "t4")
