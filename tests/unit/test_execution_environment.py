"""The execution environment: meta/execution-environment.yml in ansible-builder 3 format, pinned, and consistent
with the collection's own requirement files (the Python ones listed once); `ansible-builder create` (what `make ee`
runs) writes a build context that installs exactly that: this collection from its own tarball, helm v4 and v3 built
from their Go modules at the test bed's versions, the console callback as the stdout callback."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import yaml
from ansible_builder._target_scripts.introspect import process_collection
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

ROOT = Path(__file__).resolve().parents[2]
META = ROOT / "meta"
DEFINITION = yaml.safe_load((META / "execution-environment.yml").read_text())
GALAXY = yaml.safe_load((ROOT / "galaxy.yml").read_text())
# kubernetes.core as the `ansible` package ships it (the development venv's)
K8S_CORE_MANIFEST = Path(sysconfig.get_paths()["purelib"]) / "ansible_collections/kubernetes/core/MANIFEST.json"


def requirement_lines(path):
    return [line.strip() for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")]


def pins(path):
    """``{normalised name: version}`` of a file of ``name==version`` lines."""
    out = {}
    for line in requirement_lines(path):
        req = Requirement(line)
        (spec,) = req.specifier
        assert spec.operator == "==", line
        out[req.name.lower().replace("_", "-")] = spec.version
    return out


def test_the_definition_is_ansible_builder_3_with_a_pinned_base_image_and_ansible():
    assert DEFINITION["version"] == 3
    image = DEFINITION["images"]["base_image"]["name"]
    repository, _sep, tag = image.rpartition(":")
    assert repository and tag and tag != "latest" and any(c.isdigit() for c in tag), image
    deps = DEFINITION["dependencies"]
    core = Requirement(deps["ansible_core"]["package_pip"])
    runner = Requirement(deps["ansible_runner"]["package_pip"])
    assert [s.operator for s in core.specifier] == [s.operator for s in runner.specifier] == ["=="]
    assert pins(ROOT / "requirements" / "constraints.txt")["ansible-core"] == next(iter(core.specifier)).version
    assert deps["python_interpreter"] == {"package_system": "python3.11", "python_path": "/usr/bin/python3.11"}


def test_the_collection_dependencies_resolve_from_the_collection_root_as_introspection_reads_them():
    python, system = process_collection(str(ROOT))
    assert python == requirement_lines(META / "ee-requirements.txt")
    # listed once: the development requirements include the same file
    assert requirement_lines(ROOT / "requirements" / "runtime.txt") == ["-r ../meta/ee-requirements.txt"]
    assert system == requirement_lines(META / "ee-bindep.txt")


def test_the_constraints_pin_every_python_dependency_at_the_development_versions():
    ee = pins(META / "ee-constraints.txt")
    dev = pins(ROOT / "requirements" / "constraints.txt")
    assert {name: dev.get(name) for name in ee} == ee
    for line in requirement_lines(META / "ee-requirements.txt"):
        req = Requirement(line)
        assert ee[req.name.lower()] in req.specifier, line


def test_the_collections_are_this_ones_own_tarball_and_the_kubernetes_core_the_development_one():
    own, k8s_core = yaml.safe_load((META / "ee-galaxy.yml").read_text())["collections"]
    tarball = "gpuops-gpu_operator-%s.tar.gz" % GALAXY["version"]  # what `make build` writes
    assert own == {"name": "/build/collection/" + tarball, "type": "file"}  # never a Galaxy release
    k8s = json.loads(K8S_CORE_MANIFEST.read_text())["collection_info"]["version"]
    assert k8s_core == {"name": "kubernetes.core", "version": k8s}
    assert k8s in SpecifierSet(GALAXY["dependencies"]["kubernetes.core"])


HELM_PINS = ("HELM4_VERSION", "HELM3_VERSION")


def helm_pins(path):
    """``{"HELM4_VERSION": ..., "HELM3_VERSION": ...}`` as a shell script sets them (``X=v`` or ``X=${X:-v}``)."""
    text = path.read_text()
    return {k: re.search(r"^%s=(?:\$\{%s:-)?(v[0-9.]+)" % (k, k), text, re.M).group(1) for k in HELM_PINS}


def test_the_helm_of_the_image_is_the_helm_the_test_bed_runs():
    assert helm_pins(META / "ee-helm.sh") == helm_pins(ROOT / "tests" / "sim" / "build" / "build.sh")


@pytest.fixture(scope="module")
def context(tmp_path_factory):
    """The build context, made as `make ee` makes it: the definition next to a copy of meta/."""
    tmp = tmp_path_factory.mktemp("ee")
    (tmp / "src" / "meta").mkdir(parents=True)
    shutil.copy(META / "execution-environment.yml", tmp / "src")
    for f in META.glob("ee-*"):
        shutil.copy(f, tmp / "src" / "meta")
    (tmp / "src" / "collection").mkdir()  # `make ee` copies the tarball of `make build` here
    (tmp / "src" / "collection" / ("gpuops-gpu_operator-%s.tar.gz" % GALAXY["version"])).write_bytes(b"tarball")
    builder = Path(sys.executable).parent / "ansible-builder"
    proc = subprocess.run(
        [str(builder), "create", "--file", str(tmp / "src" / "execution-environment.yml")]
        + ["--context", str(tmp / "context"), "--output-filename", "Containerfile"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return tmp / "context"


def test_create_writes_a_containerfile_from_the_pinned_image_with_the_pinned_ansible(context):
    containerfile = (context / "Containerfile").read_text()
    assert 'ARG EE_BASE_IMAGE="%s"' % DEFINITION["images"]["base_image"]["name"] in containerfile
    assert 'ARG PYCMD="/usr/bin/python3.11"' in containerfile
    refs = "%s %s" % tuple(DEFINITION["dependencies"][k]["package_pip"] for k in ("ansible_core", "ansible_runner"))
    assert 'ARG ANSIBLE_INSTALL_REFS="%s"' % refs in containerfile
    builder_stage = containerfile.split("FROM base AS builder", 1)[1].split("FROM base AS final", 1)[0]
    assert "ENV PIP_CONSTRAINT=/tmp/ee-constraints.txt" in builder_stage


def test_create_copies_the_requirements_into_the_context(context):
    build = context / "_build"
    assert requirement_lines(build / "requirements.txt") == requirement_lines(META / "ee-requirements.txt")
    assert requirement_lines(build / "bindep.txt") == requirement_lines(META / "ee-bindep.txt")
    assert yaml.safe_load((build / "requirements.yml").read_text()) == yaml.safe_load(
        (META / "ee-galaxy.yml").read_text()
    )
    assert (build / "configs" / "ee-constraints.txt").read_text() == (META / "ee-constraints.txt").read_text()


def stage(containerfile, name):
    return containerfile.split("FROM base AS %s" % name, 1)[1].split("\nFROM ", 1)[0]


def test_create_builds_helm_in_the_builder_stage_and_puts_it_on_the_image_path(context):
    containerfile = (context / "Containerfile").read_text()
    builder, final = stage(containerfile, "builder"), stage(containerfile, "final")
    assert "COPY --from=docker.io/library/golang:" in builder and "sh /tmp/ee-helm.sh /opt/gpuops/bin" in builder
    assert "COPY --from=builder /opt/gpuops/bin/helm /opt/gpuops/bin/helm3 /usr/local/bin/" in final
    assert (context / "_build" / "helm" / "ee-helm.sh").read_text() == (META / "ee-helm.sh").read_text()
    go = subprocess.run(["go", "env", "GOVERSION"], capture_output=True, text=True, check=False).stdout.strip()
    if go:  # the Go of the image is the Go the test bed's binaries are built with
        assert "golang:%s " % go.removeprefix("go") in builder


def test_create_puts_the_collection_tarball_where_the_galaxy_stage_installs_it_from(context):
    containerfile = (context / "Containerfile").read_text()
    assert "COPY _build /build" in stage(containerfile, "galaxy")
    assert (context / "_build" / "collection" / ("gpuops-gpu_operator-%s.tar.gz" % GALAXY["version"])).is_file()


def test_the_image_speaks_through_the_console_callback(context):
    final = stage((context / "Containerfile").read_text(), "final")
    assert "ENV ANSIBLE_STDOUT_CALLBACK=gpuops.gpu_operator.console" in final
