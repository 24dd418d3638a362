"""Documentation a newcomer reads first stays true: docs/baseline.md's site.yml snippet is the playbook's baseline
plays as they are, docs/testbed.md's profile table names every profile, `make help` names the variables `make site`
reads, and the developer-only docs/simulated-operator.md is not in the built collection."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def yaml_block_after(path: Path, heading: str):
    text = path.read_text()
    section = text[text.index(heading) :]
    return yaml.safe_load(re.search(r"```yaml\n(.*?)```", section, re.S).group(1))


def test_the_baseline_docs_show_the_baseline_plays_of_site_yml_as_they_are():
    site = yaml.safe_load((ROOT / "playbooks" / "site.yml").read_text())
    assert yaml_block_after(ROOT / "docs" / "baseline.md", "## In site.yml") == site[:2]


def test_the_testbed_docs_list_every_profile():
    text = (ROOT / "docs" / "testbed.md").read_text()
    table = text[text.index("| profile | nodes | operator |") :].split("\n\n", 1)[0]
    listed = set(re.findall(r"^\| ([a-z0-9-]+) \|", table, re.M)) - {"profile"}
    assert listed == {p.stem for p in (ROOT / "tests" / "sim" / "profiles").glob("*.yml")}


def test_make_help_names_what_make_site_reads():
    out = subprocess.run(["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True)
    assert "SITE_PROFILE=" in out.stdout and "GPUOPS_BIN=" in out.stdout
    targets = re.findall(r"^([a-z-]+):", (ROOT / "Makefile").read_text(), re.M)
    helped = set(re.findall(r"[a-z][a-z-]+", out.stdout))
    assert [t for t in targets if t not in helped] == ["help"]  # every other target is named


def test_the_simulated_operator_docs_stay_out_of_the_built_collection():
    ignored = yaml.safe_load((ROOT / "galaxy.yml").read_text())["build_ignore"]
    assert "docs/simulated-operator.md" in ignored
