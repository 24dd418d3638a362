"""The Event-Driven Ansible content ships and has somewhere to run: the collection tarball keeps extensions/eda (where
ansible-rulebook looks for a collection's sources and rulebooks), and meta/decision-environment.yml is an
ansible-builder 3 definition, pinned like the execution environment, that `ansible-builder create` turns into a
build context with ansible-rulebook, its Java 17 runtime and the exact versions of requirements/constraints.txt."""

from __future__ import annotations

import fnmatch
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
META = ROOT / "meta"
DE = yaml.safe_load((META / "decision-environment.yml").read_text())
EE = yaml.safe_load((META / "execution-environment.yml").read_text())
EDA_FILES = [
    "extensions/eda/plugins/event_source/gpu_nodes.py",
    "extensions/eda/rulebooks/gpu_node_admission.yml",
]


def lines(path):
    return [ln.strip() for ln in path.read_text().splitlines() if ln.strip() and not ln.startswith("#")]


def pins(path):
    out = {}
    for line in lines(path):
        req = Requirement(line)
        (spec,) = req.specifier
        assert spec.operator == "==", line
        out[req.name.lower().replace("_", "-")] = spec.version
    return out


def test_the_collection_tarball_keeps_the_eda_content_and_leaves_molecule_out():
    ignore = yaml.safe_load((ROOT / "galaxy.yml").read_text())["build_ignore"]

    def ignored(path):
        parts = Path(path).parts
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        return any(fnmatch.fnmatch(p, pattern) for p in prefixes for pattern in ignore)

    assert [f for f in EDA_FILES if (ROOT / f).is_file() and not ignored(f)] == EDA_FILES
    assert ignored("extensions/molecule/default/molecule.yml")


def test_the_definition_is_ansible_builder_3_on_the_execution_environments_image_python_and_ansible():
    assert DE["version"] == 3
    assert DE["images"] == EE["images"]
    for key in ("python_interpreter", "ansible_core", "ansible_runner", "galaxy"):
        assert DE["dependencies"][key] == EE["dependencies"][key], key


def test_its_pins_are_the_development_versions_and_cover_ansible_rulebook_and_the_collections_runtime():
    de = pins(META / "de-constraints.txt")
    dev = pins(ROOT / "requirements" / "constraints.txt")
    assert {name: dev.get(name) for name in de} == de
    assert de["ansible-rulebook"] == "1.3.2" and {"drools-jpy", "jpy", "kubernetes"} <= set(de)
    assert pins(META / "ee-constraints.txt").items() <= de.items()  # the playbooks run inside it
    for line in lines(META / "de-requirements.txt"):
        req = Requirement(line)
        assert de[req.name.lower()] in req.specifier, line


@pytest.fixture(scope="module")
def context(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("de")
    (tmp / "src" / "meta").mkdir(parents=True)
    shutil.copy(META / "decision-environment.yml", tmp / "src")
    for f in [*META.glob("de-*"), *META.glob("ee-*")]:
        shutil.copy(f, tmp / "src" / "meta")
    builder = Path(sys.executable).parent / "ansible-builder"
    proc = subprocess.run(
        [str(builder), "create", "--file", str(tmp / "src" / "decision-environment.yml")]
        + ["--context", str(tmp / "context"), "--output-filename", "Containerfile"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return tmp / "context"


def test_create_writes_a_context_with_ansible_rulebook_java_17_and_the_constraints(context):
    containerfile = (context / "Containerfile").read_text()
    builder_stage = containerfile.split("FROM base AS builder", 1)[1].split("FROM base AS final", 1)[0]
    assert "ENV PIP_CONSTRAINT=/tmp/de-constraints.txt" in builder_stage
    assert "ENV JAVA_HOME=/usr/lib/jvm/jre-17-openjdk" in containerfile.split("FROM base AS final", 1)[1]
    build = context / "_build"
    assert lines(build / "requirements.txt") == lines(META / "de-requirements.txt")
    assert "java-17-openjdk-headless [platform:rpm]" in lines(build / "bindep.txt")
    assert (build / "configs" / "de-constraints.txt").read_text() == (META / "de-constraints.txt").read_text()
