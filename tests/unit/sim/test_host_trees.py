"""A simulated host loads the driver its NVML profile reports: the bed's host root is the fixture tree with its
kernel module version set to the profile's driver (a cached copy), or the tree itself where they already agree."""

from __future__ import annotations

from pathlib import Path

from tests.sim import host_trees

TREE = "ubuntu2204-kubeadm-containerd"  # loads 550.127.05


def test_a_profile_with_the_trees_driver_gets_the_fixture_tree_itself(tmp_path):
    assert host_trees.host_root(TREE, "a100-mig-8", tmp_path) == host_trees.HOSTS_DIR / TREE
    assert not (tmp_path / "hosts").exists()


def test_a_profile_with_another_driver_gets_a_copy_that_loads_that_driver_and_is_otherwise_the_same(tmp_path):
    root = host_trees.host_root(TREE, "h100-sxm-8", tmp_path)
    assert root.parent == tmp_path / "hosts" and root.name.endswith("@570.124.06")
    assert host_trees.module_version(root) == "570.124.06" == host_trees.nvml_driver("h100-sxm-8")
    assert (
        (root / "proc/driver/nvidia/version")
        .read_text()
        .startswith("NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.124.06  ")
    )
    source = host_trees.HOSTS_DIR / TREE
    files = sorted(str(p.relative_to(source)) for p in source.rglob("*"))
    assert sorted(str(p.relative_to(root)) for p in root.rglob("*")) == files
    for rel in files:
        a, b = source / rel, root / rel
        assert a.is_symlink() == b.is_symlink(), rel
        if a.is_file() and not a.is_symlink() and rel != "proc/driver/nvidia/version":
            assert a.read_bytes() == b.read_bytes(), rel


def test_the_copy_is_made_once_and_reused(tmp_path):
    first = host_trees.host_root(TREE, "t4-1", tmp_path)
    marker = first / "marker"
    marker.write_text("kept")
    assert host_trees.host_root(TREE, "t4-1", tmp_path) == first and marker.exists()
    assert [p.name for p in (tmp_path / "hosts").iterdir()] == [first.name]


def test_a_tree_without_a_loaded_module_is_used_as_it_is(tmp_path):
    tree = "broken-nouveau-no-headers"
    assert host_trees.module_version(host_trees.HOSTS_DIR / tree) is None
    assert host_trees.host_root(tree, "h100-sxm-8", tmp_path) == host_trees.HOSTS_DIR / tree


def test_every_profile_of_the_bed_gets_hosts_whose_module_is_their_nvml_driver(tmp_path):
    from tests.sim import profiles

    for path in sorted((host_trees.SIM_DIR / "profiles").glob("*.yml")):
        for pool in profiles.load(str(path)).gpu_pools():
            if pool.host_tree and pool.nvml_profile:
                root = Path(host_trees.host_root(pool.host_tree, pool.nvml_profile, tmp_path))
                assert host_trees.module_version(root) in (None, host_trees.nvml_driver(pool.nvml_profile)), pool
