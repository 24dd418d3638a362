"""Damage specification of gpu_host_facts: every fake host tree with each file removed, garbled or unreadable, each
directory unreadable and each link dangling gives partial facts with problems: never a traceback, never a fact
changed without a problem naming the damaged path, never a true/false answer from a source that could not be
read (see host_damage.py for the rules).

CI runs as root, and root reads a file whatever its mode: the unreadable rounds run in a child process started
without CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH (setpriv), which first checks that a mode-000 file really
cannot be read."""

from __future__ import annotations

import shutil
from pathlib import Path

import host_damage
import pytest

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.host_facts.facts import collect

HOSTS = Path(__file__).resolve().parents[5] / "tests" / "sim" / "hosts"
TREES = sorted(p.name for p in HOSTS.iterdir() if p.is_dir())


@pytest.fixture(scope="module")
def copies(tmp_path_factory):
    """A private copy of every tree (links kept as links), damaged and restored in turn."""
    base = tmp_path_factory.mktemp("damage")
    for tree in TREES:
        shutil.copytree(HOSTS / tree, base / tree, symlinks=True)
    return base


@pytest.fixture(scope="module")
def unreadable(copies):
    """``{tree: {path: violations}}`` of the unreadable rounds over every tree, from the child process."""
    return host_damage.unprivileged(*(copies / t for t in TREES))


def rounds(root, kind):
    """``{path: violations}`` of one tree with each file (or, for ``dangling``, each link) damaged in turn."""
    files, links, _dirs = host_damage.entries(root)
    before = collect(str(root))
    found = {}
    for rel in links if kind == "dangling" else files:
        bad = host_damage.violations(str(root), rel, kind, before, collect)
        if bad:
            found[rel] = bad
    return found


@pytest.mark.parametrize("tree", TREES)
@pytest.mark.parametrize("kind", ["removed", "garbled", "dangling"])
def test_each_file_removed_garbled_or_link_dangling_gives_partial_facts_with_problems(copies, tree, kind):
    assert rounds(copies / tree, kind) == {}


@pytest.mark.parametrize("tree", TREES)
def test_each_file_or_directory_unreadable_gives_unknown_facts_with_problems(unreadable, tree):
    assert unreadable[tree] == {}


def test_every_tree_had_files_links_and_directories_to_damage(copies):
    for tree in TREES:
        files, links, dirs = host_damage.entries(copies / tree)
        assert files and dirs, tree
    assert all(host_damage.entries(copies / t)[1] for t in TREES if t != "broken-nouveau-no-headers")


def test_damage_is_undone_after_each_round(copies):
    for tree in TREES:
        assert collect(str(copies / tree)) == dict(collect(str(HOSTS / tree)), host_root=str(copies / tree))
