"""Damage for the fake host trees and the rules facts must keep under it (used by test_host_facts_damage.py).

Each file of a tree is removed, garbled (NUL bytes, as a zeroed block leaves it) or made unreadable, each link
left dangling (same name, target gone), each directory made unreadable; after each, the tree is collected again
and compared with the pristine facts:

- never a traceback, and every fact keeps its shape (the same keys);
- never a silent loss: when a fact changed, a problem names the damaged path (or a path below it);
- unknown is not false: a garbled or unreadable source never turns a true/false fact into the other, only into
  None.

Run as a script (``host_damage.py ROOT...``) it does the unreadable rounds and prints ``{tree: {path:
[violations]}}`` as JSON (``host_damage.py --collect ROOT...``: the facts of each root as they are); the specs
start it without DAC override when they run as root (:func:`unprivileged`), since root reads any file.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import traceback
from contextlib import contextmanager
from pathlib import Path

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.host_facts.paths import Paths

GARBLE = b"\x00\x7fgarbled\x00\n"
#: Capabilities that let root read any file.
DAC_CAPS = "-dac_override,-dac_read_search"
#: Exit status of the script when a file with mode 000 could still be read (DAC override still in effect).
STILL_READABLE = 3


def entries(root):
    """(files, links, directories) of a tree, root-relative and sorted; links are not followed."""
    files, links, dirs = [], [], []
    for top, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(top, name)
            rel = os.path.relpath(path, root)
            if os.path.islink(path):
                links.append(rel)
            elif os.path.isdir(path):
                dirs.append(rel)
            else:
                files.append(rel)
    return sorted(files), sorted(links), sorted(dirs)


@contextmanager
def damaged(root, rel, kind):
    """``rel`` under ``root`` removed, garbled, unreadable or dangling for the duration of the block."""
    path = os.path.join(root, rel)
    target = os.readlink(path) if os.path.islink(path) else None
    data = None if target is not None or os.path.isdir(path) else Path(path).read_bytes()
    mode = os.lstat(path).st_mode
    if kind == "removed":
        os.unlink(path)
    elif kind == "garbled":
        Path(path).write_bytes(GARBLE)
    elif kind == "dangling":
        os.unlink(path)
        os.symlink(os.path.join(os.path.dirname(target), "gone", os.path.basename(target)), path)
    elif kind == "unreadable":
        os.chmod(path, 0)
    try:
        yield
    finally:
        if kind == "unreadable":
            os.chmod(path, stat.S_IMODE(mode))
        elif kind == "garbled":
            Path(path).write_bytes(data)
        else:
            if os.path.lexists(path):
                os.unlink(path)
            if target is not None:
                os.symlink(target, path)
            else:
                Path(path).write_bytes(data)


def leaves(value, path=""):
    """``{path: leaf}`` of nested dicts and lists (``pci.devices.0.kind``)."""
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return {path: value}
    out = {}
    for key, sub in items:
        out.update(leaves(sub, "%s.%s" % (path, key) if path else str(key)))
    return out


def shape(facts):
    """The keys of every fact, and of every fact's dict values one level down."""
    return {k: sorted(v) if isinstance(v, dict) else type(v).__name__ for k, v in facts.items()}


def inside(root, rel):
    """Where ``rel`` leads inside the tree, links resolved as chroot would (as gpu_host_facts reads it); where
    the walk stopped when it leads nowhere."""
    walk = Paths(str(root)).walk(rel.strip("/"))
    return walk.path if walk.path is not None else walk.failure[1]


def explained(root, rel, problems):
    """True when a problem's source is ``rel`` or lies below it (links resolved inside the tree)."""
    damaged_path = inside(root, rel)
    for p in problems:
        source = inside(root, p["source"])
        named = p["source"] == "/" + rel or p["source"].startswith("/" + rel + "/")
        if named or source == damaged_path or source.startswith(damaged_path + "/"):
            return True
    return False


def violations(root, rel, kind, before, collect):
    """What ``collect`` breaks on ``root`` with ``rel`` damaged by ``kind``, compared with ``before``."""
    with damaged(root, rel, kind):
        try:
            after = collect(root)
        except Exception:  # a traceback is the first thing this spec looks for
            return ["raised " + traceback.format_exc(limit=-3)]
    out = []
    if shape(after) != shape(before):
        out.append("shape changed: %s" % sorted(k for k in shape(before) if shape(before)[k] != shape(after).get(k)))
    old, new = leaves(dict(before, problems=None)), leaves(dict(after, problems=None))
    changed = sorted(k for k in set(old) | set(new) if old.get(k, "<absent>") != new.get(k, "<absent>"))
    if changed and kind != "removed" and not explained(root, rel, after["problems"]):
        out.append("silent change: %s" % ", ".join(changed[:6]))
    if kind in ("garbled", "unreadable"):
        flipped = [k for k in changed if isinstance(old.get(k), bool) and isinstance(new.get(k), bool)]
        if flipped:
            out.append("a definite answer from an unknown source: %s" % ", ".join(flipped))
    return out


def unreadable_rounds(root, collect):
    """``{path: violations}`` for every file and directory of ``root`` made unreadable in turn."""
    before = collect(root)
    files, _links, dirs = entries(root)
    found = {}
    for rel in files + dirs:
        bad = violations(root, rel, "unreadable", before, collect)
        if bad:
            found[rel] = bad
    return found


def unprivileged(*args):
    """The JSON this script prints for ``args``, run without DAC override when this process is root."""
    argv = [sys.executable, __file__, *map(str, args)]
    if os.geteuid() == 0:
        argv = ["setpriv", "--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=" + DAC_CAPS, "--", *argv]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, check=False, timeout=300)
    assert proc.returncode != STILL_READABLE, "a mode-000 file was still readable: DAC override kept"
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def main(args):
    from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.host_facts.facts import collect

    roots = [a for a in args if a != "--collect"]
    probe = os.path.join(os.path.dirname(roots[0]), "probe-%d" % os.getpid())
    Path(probe).write_bytes(b"x")
    os.chmod(probe, 0)
    try:
        open(probe, "rb").close()
        return STILL_READABLE
    except PermissionError:
        pass
    finally:
        os.unlink(probe)
    if "--collect" in args:
        print(json.dumps([collect(r) for r in roots]))
    else:
        print(json.dumps({os.path.basename(r): unreadable_rounds(r, collect) for r in roots}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
