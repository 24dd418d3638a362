"""Helpers for the gpu_validate specs: run the tests' site play on the test bed and read its report."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.integration.helpers import bed_inventory, run_playbook

REPO_ROOT = Path(__file__).resolve().parents[3]
COLLECTIONS = REPO_ROOT / "build" / "collections"
PLAY = Path(__file__).resolve().parent / "site_validate.yml"
NVML_LIB = REPO_ROOT / "build" / "nvml" / "libnvidia-ml.so.1"


class Validate:
    """Runs site_validate.yml (NVML facts on every simulated GPU host, then the role) as the SA identity."""

    def __init__(self, bed, workdir: Path):
        self.bed, self.workdir = bed, workdir
        self.inventory = bed_inventory(bed.state_dir, workdir / "inventory.yml")
        self.runs = 0

    def run(self, check=False, **extra_vars):
        """Run the play; returns (returncode, report dict or None, stdout)."""
        self.runs += 1
        report_dir = Path(extra_vars.pop("gpuops_report_dir", self.workdir / ("run-%d" % self.runs)))
        extra = {"gpuops_report_dir": str(report_dir), "gpu_nvml_library": str(NVML_LIB), **extra_vars}
        env = dict(
            os.environ,
            ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS),
            ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="false",
            ANSIBLE_LOCALHOST_WARNING="0",
            ANSIBLE_FORCE_COLOR="0",
            ANSIBLE_NOCOLOR="1",
        )
        proc = run_playbook(self.inventory, PLAY, extra, env, *(["--check"] if check else []))
        report = report_dir / "gpu-validate.json"
        data = json.loads(report.read_text()) if report.exists() else None
        # the versioned report ({kind, schema_version, generated_at, report}): the summary is its `report`
        data = data["report"] if data and "schema_version" in data else data
        return proc.returncode, data, proc.stdout + proc.stderr

    @staticmethod
    def rows(report):
        return {r["node"]: r for r in report["rows"]}

    @staticmethod
    def layers(report):
        return {r["node"]: r["failing_layer"] for r in report["rows"]}
