"""playbooks/site.yml on the `demo-dra-faults` profile (`make site SITE_PROFILE=demo-dra-faults`): the DRA demo cluster,
installed in GPUCluster mode, with one broken DRA driver on three of its six GPU nodes - a node without its
ResourceSlice, one whose slice lists 7 of its 8 GPUs, one whose kubelet plugin crash-loops. The play fails naming
each at layer dra, and node triage (given each host's NVML facts) and the audit judge every node as the validation
did: one layer and one code each, none on the healthy nodes.

The module starts its own test bed (the session bed is the `ci` profile) and stops it afterwards."""

from __future__ import annotations

import pytest

from tests.integration.conftest import profile_bed
from tests.integration.site.test_site_playbook import operator_log_tail, run_site, verdicts
from tests.integration.workflows import Workflows

FAULTY = {
    "h100-noslice-0": ("dra", "NoResourceSlice"),
    "h100-fewer-0": ("dra", "DevicesNotAsNVML"),
    "a100-crash-0": ("dra", "DraPluginNotReady"),
}
HEALTHY = ("h100-0", "h100-1", "a100-0")


@pytest.fixture(scope="module")
def site_run(tmp_path_factory):
    """(the bed, site.yml's process, its validation report's rows) after one run of site.yml."""
    with profile_bed(tmp_path_factory.mktemp("site-dra-bed"), "demo-dra-faults") as (bed, inventory):
        reports = tmp_path_factory.mktemp("site-dra-reports")
        site = run_site(inventory, reports)
        yield bed, site, verdicts(reports)


def test_site_fails_naming_each_broken_dra_driver_at_the_dra_layer(site_run):
    bed, site, rows = site_run
    out = site.stdout + site.stderr
    assert site.returncode != 0, out[-3000:]
    assert "GPU validation: 3 passed, 3 failed of 6 GPU nodes" in out, out[-3000:] + operator_log_tail(bed)
    assert {n: r["failing_layer"] for n, r in rows.items()} == dict.fromkeys(HEALTHY) | dict.fromkeys(FAULTY, "dra")


def test_node_triage_and_the_audit_judge_each_node_as_the_site_validation_did(site_run, tmp_path):
    bed, _site, rows = site_run
    expected = dict.fromkeys(HEALTHY, (None, None)) | FAULTY
    Workflows(bed, tmp_path).assert_judged_alike(rows, expected)
