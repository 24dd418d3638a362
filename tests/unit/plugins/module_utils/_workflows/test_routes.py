"""Fault routing: every layer has an owner by default, a route overrides one layer, and a fleet validation's failures
are grouped by the owner of their failing layer, each with its evidence, fix and first command."""

from __future__ import annotations

import pytest
from fleet_fixtures import mixed_fleet, mixed_summary

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.errors import GpuOpsError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.layers import (
    DEFAULT_ROUTES,
    LAYERS,
    merged_routes,
    owner_of,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.fleet import (
    FleetInputs,
    fleet_summary,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.owners import failures_by_owner


def test_every_layer_has_a_default_owner():
    assert sorted(DEFAULT_ROUTES) == sorted(LAYERS)


@pytest.mark.parametrize(
    ("layer", "owner"),
    [
        ("driver", "node-os-team"),
        ("toolkit", "node-os-team"),
        ("gpu-health", "node-os-team"),
        ("device-plugin", "platform-team"),
        ("dra", "platform-team"),
        ("scheduling", "platform-team"),
        ("quota", "namespace-admins"),
        ("queue", "namespace-admins"),
    ],
)
def test_the_default_routes_send_each_layer_to_the_team_that_can_fix_it(layer, owner):
    assert owner_of(layer) == owner


def test_a_route_overrides_one_layer_and_keeps_the_others():
    routes = merged_routes({"driver": "infra-oncall"})
    assert (owner_of("driver", routes), owner_of("toolkit", routes)) == ("infra-oncall", "node-os-team")


def test_no_layer_has_no_owner():
    assert owner_of(None) is None


def test_an_unknown_layer_in_the_routes_fails_naming_it_and_the_known_ones():
    with pytest.raises(GpuOpsError, match=r"unknown layer 'drivers'; route one of driver, node, toolkit"):
        merged_routes({"drivers": "x"})


def test_an_empty_owner_fails_naming_its_layer():
    with pytest.raises(GpuOpsError, match="the owner of layer quota must be a non-empty string"):
        merged_routes({"quota": " "})


def test_the_failures_are_grouped_by_owner_lowest_layer_first_each_with_its_fix_command():
    groups = mixed_summary()["by_owner"]
    assert [(g["owner"], g["layers"]) for g in groups] == [
        ("node-os-team", ["driver", "toolkit", "gpu-health"]),
        ("platform-team", ["device-plugin"]),
    ]
    first = groups[0]["failures"][0]
    assert sorted(first) == ["command", "evidence", "fix", "host", "layer", "node"]
    assert first["layer"] == "driver" and first["evidence"] and first["fix"] and first["command"]


def test_the_grouping_follows_the_routes_given():
    hosts, nodes = mixed_fleet()
    summary = fleet_summary(hosts, nodes, FleetInputs(routes={"gpu-health": "hardware-vendor"}))
    assert [g["owner"] for g in summary["by_owner"]] == ["node-os-team", "platform-team", "hardware-vendor"]


def test_a_passing_fleet_has_no_owner_to_call():
    assert failures_by_owner([{"node": "a", "verdict": "pass", "failing_layer": None}]) == []
