"""The baseline_options filter: the options validated, the check catalogue after overrides, the target release."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.gpu_operator.plugins.filter.baseline_options import FilterModule


def baseline_options(raw, user_checks=None):
    return FilterModule().filters()["baseline_options"](raw, user_checks)


def entry(out, check_id):
    return next(c for c in out["checks"] if c["id"] == check_id)


def test_defaults_give_the_catalogue_sorted_by_id_and_the_default_release():
    out = baseline_options({})
    ids = [c["id"] for c in out["checks"]]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert {c["scope"] for c in out["checks"]} == {"host", "cluster"}
    assert entry(out, "nouveau.loaded") == {
        "id": "nouveau.loaded",
        "scope": "host",
        "severity": "fail",
        "title": "nouveau is not loaded",
    }
    assert out["skip"] == [] and out["release"]["release"] == "26.7"


def test_the_target_driver_is_the_one_asked_for_else_the_releases_default():
    assert baseline_options({})["target_driver"] == baseline_options({})["release"]["default_driver"]
    assert baseline_options({"driver_version": "570.124.06"})["target_driver"] == "570.124.06"


def test_a_severity_override_shows_in_the_catalogue():
    out = baseline_options({"severity": {"nouveau.loaded": "warn"}})
    assert entry(out, "nouveau.loaded")["severity"] == "warn"


def test_the_skip_list_is_returned_as_given():
    assert baseline_options({"skip": ["nouveau.loaded", "gpu.health"]})["skip"] == ["nouveau.loaded", "gpu.health"]


def test_user_checks_given_apart_follow_the_built_in_ones():
    checks = [
        {"id": "site.kernel_pinned", "failed": False, "description": "The kernel is held"},
        {"id": "site.quota", "failed": False, "scope": "cluster", "severity": "warn"},
    ]
    out = baseline_options({"severity": {"site.quota": "info"}}, checks)
    assert out["checks"][-2:] == [
        {"id": "site.kernel_pinned", "scope": "host", "severity": "fail", "title": "The kernel is held"},
        {"id": "site.quota", "scope": "cluster", "severity": "info", "title": "site.quota"},
    ]


@pytest.mark.parametrize(
    "raw, user_checks, message",
    [
        ({"skip": ["nope"]}, None, r"gpu_baseline_skip names unknown check id\(s\): nope"),
        ({"severity": {"nouveau.loaded": "fatal"}}, None, "nouveau.loaded=fatal; a severity is fail, warn or info"),
        ({"operator_version": "v23.9.0"}, None, "gpu_baseline_operator_version: .*'v23.9.0'"),
        ({"kernel_module_type": "closed"}, None, "gpu_baseline_kernel_module_type is 'closed'"),
        ({}, [{"id": "nouveau.loaded", "failed": True}], "id 'nouveau.loaded' is already taken"),
        ({}, [{"failed": True}], r"gpu_baseline_user_checks\[0\] has no id"),
    ],
)
def test_bad_options_fail_the_filter_naming_the_bad_input(raw, user_checks, message):
    with pytest.raises(AnsibleFilterError, match=message):
        baseline_options(raw, user_checks)
