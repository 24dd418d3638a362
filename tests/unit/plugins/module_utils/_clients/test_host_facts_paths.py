"""Specification of the host root confinement of gpu_host_facts (host_facts/paths.py and the Reader over it):
every path is resolved inside host_root as chroot would resolve it - an absolute link target from the root, ``..``
stopped at the root, links counted so a loop ends - and a link that climbs above the root or points nowhere is a
problem. The property spec builds random trees whose links point anywhere (into the tree, above it, at a
directory beside it full of decoys, at themselves) and watches every file system call: none leaves the root."""

from __future__ import annotations

import builtins
import os
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.host_facts import facts as hf
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.host_facts.paths import MAX_LINKS, Paths
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.host_facts.reader import Reader

DECOY = "decoy-outside-the-root"


def tree(base, files=(), links=(), decoys=()):
    """``base/root`` with ``files`` ({rel: text}) and ``links`` ({rel: target}), and ``base/outside`` beside it
    holding a decoy at each of ``decoys``. FileExistsError when a name would be both a file (or link) and a
    directory."""
    root, outside = base / "root", base / "outside"
    for top, entries in ((root, dict(files)), (outside, dict.fromkeys(_leaves(decoys), DECOY))):
        top.mkdir(parents=True, exist_ok=True)
        for rel, text in entries.items():
            (top / rel).parent.mkdir(parents=True, exist_ok=True)
            (top / rel).write_text(text)
    for rel, target in dict(links).items():
        if any((root / rel).parents[i].is_symlink() for i in range(len(Path(rel).parents) - 1)):
            raise FileExistsError(rel)  # never create a link through another link
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(str(target).replace("{outside}", str(outside)), root / rel)
    return root


def _clash(a, b):
    return a == b or a.startswith(b + "/") or b.startswith(a + "/")


def _leaves(paths):
    """``paths`` without those that would need another of them to be a directory (the first one wins)."""
    out = []
    for path in paths:
        if not any(_clash(path, p) for p in out):
            out.append(path)
    return out


def test_an_absolute_link_is_read_from_the_root_not_from_the_machine_running_the_module(tmp_path):
    root = tree(
        tmp_path,
        {"usr/lib/os-release": "ID=rocky\n", "run/cdi/nvidia.yaml": "kind: nvidia.com/gpu\ndevices: []\n"},
        {"etc/os-release": "/usr/lib/os-release", "var/run": "/run"},
    )
    r = Reader(str(root))
    assert r.read("etc/os-release") == "ID=rocky\n"
    assert r.listdir("var/run/cdi") == ["nvidia.yaml"]
    assert r.resolve("var/run/cdi/nvidia.yaml") == "run/cdi/nvidia.yaml"
    assert r.problems == []  # re-rooting an absolute link is what the host itself does


def test_dot_dot_stops_at_the_root_and_is_a_problem_naming_the_link(tmp_path):
    root = tree(tmp_path, {"etc/os-release": "ID=ubuntu\n"}, {"etc/alt": "../../../../../etc/os-release"})
    r = Reader(str(root))
    assert r.read("etc/alt") == "ID=ubuntu\n"  # clamped at the root, as chroot would
    assert r.problems == [
        {
            "source": "/etc/alt",
            "reason": "outside_root",
            "detail": "links to ../../../../../etc/os-release, above host_root; read as chroot would",
        }
    ]


def test_a_link_to_nowhere_is_absent_with_a_problem_naming_the_link(tmp_path):
    root = tree(tmp_path, {"etc/hostname": "x\n"}, {"var/run": "/gone/run"})
    r = Reader(str(root))
    assert r.read("var/run/cdi/nvidia.json") is None
    assert r.absent("var/run/cdi/nvidia.json") and r.listdir("var/run/cdi") == []
    assert r.problems == [{"source": "/var/run", "reason": "dangling", "detail": "links to /gone/run"}]


def test_a_link_loop_ends_and_is_unknown_not_absent(tmp_path):
    root = tree(tmp_path, {"etc/hostname": "x\n"}, {"etc/a": "b", "etc/b": "/etc/a"})
    r = Reader(str(root))
    assert r.read("etc/a") is None and not r.absent("etc/a")
    assert [(p["source"], p["reason"]) for p in r.problems] == [("/etc/a", "loop")]
    assert r.present("etc/a") is True  # the link itself exists


def test_a_chain_of_links_is_bounded(tmp_path):
    links = {"l%d" % i: "l%d" % (i + 1) for i in range(MAX_LINKS + 1)}
    root = tree(tmp_path, {"l%d" % (MAX_LINKS + 1): "end\n"}, links)
    assert Paths(str(root)).walk("l1").path == "l%d" % (MAX_LINKS + 1)  # MAX_LINKS links: followed
    assert Paths(str(root)).walk("l0").failure[0] == "loop"  # one more: counted as a loop


def test_a_file_used_as_a_directory_is_absent(tmp_path):
    root = tree(tmp_path, {"etc/os-release": "ID=x\n"}, {"etc/link": "os-release/inner"})
    r = Reader(str(root))
    assert r.read("etc/os-release/x") is None and r.absent("etc/os-release/x")
    assert r.read("etc/link") is None and r.absent("etc/link")
    assert [(p["source"], p["reason"]) for p in r.problems] == [("/etc/link", "dangling")]


# --- the property: for random trees with links pointing anywhere, no read leaves the root ----------------------

NAMES = ("etc", "run", "var", "proc", "sys", "os-release", "cdi", "a", "b")
REL = st.lists(st.sampled_from(NAMES), min_size=1, max_size=4).map("/".join)


def targets(known):
    """Link targets: a path of the tree (``known``) or any path, absolute (re-rooted), relative with ``..`` that
    may climb above the root, the machine's own path to the decoys beside the root, or the root and its parent."""
    path = st.sampled_from(known) | REL if known else REL
    return st.one_of(
        path.map(lambda p: "/" + p),
        st.tuples(st.integers(0, 6), path).map(lambda t: "../" * t[0] + t[1]),
        path.map(lambda p: "{outside}/" + p),
        st.sampled_from(["/", "..", ".", "../..", "/.."]),
    )


@st.composite
def trees(draw):
    """(files, links) of a random tree whose links point anywhere, often at its own files."""
    names = _leaves(draw(st.lists(REL, min_size=2, max_size=12)))
    split = draw(st.integers(0, len(names) - 1))
    files, links = dict.fromkeys(names[:split], "inside\n"), {}
    for name in names[split:]:
        links[name] = draw(targets(sorted(files) + sorted(links)))
    return files, links


PROBES = ("etc/os-release", "run/cdi", "var/run/cdi", "proc/cmdline", "sys/module", "a", "a/b", "b/a/os-release")


@contextmanager
def watched(calls):
    """Every path handed to open, os.open, os.lstat, os.stat, os.listdir, os.scandir and os.readlink, in
    ``calls`` as (function, path); an os.open with O_NOFOLLOW is told apart (it never follows a last link)."""
    originals = {name: getattr(os, name) for name in ("open", "lstat", "stat", "listdir", "scandir", "readlink")}
    original_open = builtins.open

    def spy(name, fn):
        def call(path, *args, **kwargs):
            nofollow = name == "open" and bool(args and args[0] & os.O_NOFOLLOW)
            calls.append(
                (
                    name + "(O_NOFOLLOW)" if nofollow else name,
                    os.fsdecode(path) if isinstance(path, (str, bytes)) else path,
                )
            )
            return fn(path, *args, **kwargs)

        return call

    with pytest.MonkeyPatch.context() as mp:
        for name, fn in originals.items():
            mp.setattr(os, name, spy(name, fn))
        mp.setattr(builtins, "open", spy("builtins.open", original_open))
        yield


def inside(root, path):
    """True when ``path`` is ``root`` or below it without a link on the way (its parent's real path is in the
    root; ``path`` itself may be a link only for lstat and readlink, which do not follow it)."""
    real_root = os.path.realpath(root)
    parent = os.path.realpath(os.path.dirname(path))
    return path == root or (parent == real_root or parent.startswith(real_root + os.sep)) and ".." not in path


def confined(root, calls):
    """The calls that read outside ``root`` (none, when confinement holds)."""
    bad = []
    for name, path in calls:
        if not isinstance(path, str) or not inside(root, path):
            bad.append((name, path))
        elif name not in ("lstat", "readlink", "open(O_NOFOLLOW)") and os.path.islink(path):
            bad.append((name, path + " (a link, followed by the call)"))
    return bad


@settings(max_examples=60, deadline=None)
@given(trees())
def test_no_read_leaves_the_root_whatever_the_links(tmp_path_factory, tree_):
    files, links = tree_
    base = tmp_path_factory.mktemp("confined")
    try:
        root = tree(base, files, links, decoys=PROBES + tuple(files) + tuple(links))
    except (FileExistsError, NotADirectoryError, IsADirectoryError):
        assume(False)  # a name used as both a file and a directory: not a tree
    root_s, calls = str(root), []
    with watched(calls):
        r = Reader(root_s)
        answers = [
            (r.read(p), r.listdir(p), r.present(p), r.resolve(p), r.readlink(p), r.json(p), r.yaml(p))
            for p in PROBES + tuple(links) + tuple(files)
        ]
        facts = hf.collect(root_s)
    assert confined(root_s, calls) == []
    assert DECOY not in repr(answers) and DECOY not in repr(facts)
    for p in r.problems + facts["problems"]:
        assert p["reason"] in ("missing", "malformed", "dangling", "outside_root", "loop", "unreadable"), p


def test_the_watch_sees_a_read_that_leaves_the_root(tmp_path):
    """The property above can fail: a plain open through an absolute link is caught."""
    root = tree(
        tmp_path, {"usr/lib/os-release": "ID=x\n"}, {"etc/os-release": "{outside}/etc/os-release"}, ["etc/os-release"]
    )
    calls = []
    with watched(calls), open(os.path.join(str(root), "etc/os-release")) as f:
        assert f.read() == DECOY
    assert confined(str(root), calls) == [
        ("builtins.open", str(root) + "/etc/os-release (a link, followed by the call)")
    ]
    assert Reader(str(root)).read("etc/os-release") is None  # the resolver re-roots it: /<outside>/... is absent
    assert Path(root / "etc/os-release").is_symlink()
