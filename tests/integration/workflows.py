"""The collection's workflows run on a test bed as a person runs them, with ansible-playbook over the bed's
inventory (the least-privilege identity; NVML facts from each simulated host's fixture): the audit, and the node
triage given each host's NVML facts."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.integration.helpers import bed_inventory, collection_env, run_playbook

ROOT = Path(__file__).resolve().parents[2]
LIB = ROOT / "build" / "nvml" / "libnvidia-ml.so.1"
TRIAGE_PLAY = Path(__file__).resolve().parent / "triage_nodes.yml"


class Workflows:
    """``audit(name)`` and ``triage_nodes(name)`` on ``bed``, each run's files under ``work/name``."""

    def __init__(self, bed, work: Path):
        subprocess.run(["make", "-s", "-C", str(ROOT / "tests" / "sim" / "nvml")], check=True)
        self.work = work
        self.inventory = bed_inventory(bed.state_dir, work / "inventory.yml")
        self.env = collection_env(work)
        self.env.pop("LD_LIBRARY_PATH", None)  # the NVML library comes from gpu_nvml_library only

    def _play(self, playbook, extra):
        proc = run_playbook(self.inventory, playbook, extra, self.env, timeout=600)
        assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-2000:]

    def audit(self, name):
        """(JSON snapshot text, Markdown, HTML) of playbooks/audit.yml."""
        reports = self.work / name
        self._play(
            ROOT / "playbooks" / "audit.yml", {"gpu_nvml_library": str(LIB), "gpu_audit_report_dir": str(reports)}
        )
        return tuple((reports / ("gpu-audit." + ext)).read_text() for ext in ("json", "md", "html"))

    def triage_nodes(self, name):
        """``{node: gpu_triage_info result}`` for every GPU host's node, given the host's NVML facts."""
        results = self.work / ("%s-triage.json" % name)
        self._play(TRIAGE_PLAY, {"gpu_nvml_library": str(LIB), "triage_results": str(results)})
        return {r["target"]["name"]: r for r in json.loads(results.read_text())}

    def first_judged(self, rows):
        """``{workflow: {node: (layer, code)}}``: the first error of each node from the validation report's ``rows``
        (``{node: row}``, of its failing layer), from node triage and from the audit, both run now as ``judged``."""
        triaged, snapshot = self.triage_nodes("judged"), json.loads(self.audit("judged")[0])
        return {
            "validate": {
                n: first_error([f for f in r["findings"] if f["layer"] == r["failing_layer"]], "code")
                for n, r in rows.items()
            },
            "triage": {n: first_error(r["findings"], "reason") for n, r in triaged.items()},
            "audit": {r["node_name"]: first_error(r["judgement"]["findings"], "code") for r in snapshot["fleet"]},
        }

    def assert_judged_alike(self, rows, expected):
        """Each workflow of :meth:`first_judged` names ``expected`` (``{node: (layer, code)}``) for its nodes."""
        for workflow, found in self.first_judged(rows).items():
            assert {n: found.get(n) for n in expected} == expected, workflow


def first_error(findings, key):
    """``(layer, code)`` of the first error among ``findings``, the code read at ``key`` (None for a validation check
    that has none; the validation report's findings are all errors)."""
    errors = [f for f in findings if f.get("severity", "error") == "error"]
    return (errors[0]["layer"], errors[0].get(key)) if errors else (None, None)
