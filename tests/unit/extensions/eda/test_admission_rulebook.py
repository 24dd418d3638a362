"""The admission rulebook (extensions/eda/rulebooks/gpu_node_admission.yml) as ansible-rulebook 1.3.2 reads it,
offline: valid against its schema, its conditions parsed by its rules parser, one action at a time, each action a
playbook of this collection; and ansible-rulebook's CLI starts with no network."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml
from ansible_rulebook.rules_parser import parse_rules
from ansible_rulebook.validators import Validate

ROOT = Path(__file__).resolve().parents[4]
RULEBOOK = yaml.safe_load((ROOT / "extensions" / "eda" / "rulebooks" / "gpu_node_admission.yml").read_text())


def test_the_rulebook_is_valid_for_ansible_rulebook_and_runs_one_action_at_a_time():
    Validate.rulebook(RULEBOOK)
    (ruleset,) = RULEBOOK
    rules = parse_rules(ruleset["rules"], {})
    assert [r.actions[0].action for r in rules] == ["run_playbook", "run_playbook"]
    assert ruleset["execution_strategy"] == "sequential"
    (source,) = ruleset["sources"]
    assert "gpuops.gpu_operator.gpu_nodes" in source


def test_each_action_runs_a_playbook_of_the_collection_for_the_events_node():
    (ruleset,) = RULEBOOK
    actions = {rule["condition"]: rule["action"]["run_playbook"] for rule in ruleset["rules"]}
    assert set(actions) == {'event.gpu_node.action == "admit"', 'event.gpu_node.action == "triage"'}
    for run in actions.values():
        collection, _dot, playbook = run["name"].rpartition(".")
        assert collection == "gpuops.gpu_operator" and (ROOT / "playbooks" / (playbook + ".yml")).is_file()
        assert run["extra_vars"] == {"gpuops_node": "{{ event.gpu_node.node }}"}


def test_the_source_ships_where_ansible_rulebook_finds_a_collections_sources():
    assert (ROOT / "extensions" / "eda" / "plugins" / "event_source" / "gpu_nodes.py").is_file()


def test_ansible_rulebook_help_runs_offline():
    cli = Path(sys.executable).parent / "ansible-rulebook"
    proc = subprocess.run([str(cli), "--help"], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "--rulebook" in proc.stdout and "--inventory" in proc.stdout
