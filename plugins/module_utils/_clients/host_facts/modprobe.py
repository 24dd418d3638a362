# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""modprobe.d(5) configuration: which modules are blacklisted and their options, read once per collection.

A file in an earlier directory of :data:`MODPROBE_DIRS` hides a file of the same name in a later one. When a file
could not be read or has lines modprobe would not understand, "not blacklisted" is unknown (None).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.host_facts.reader import tri_any

MODPROBE_DIRS = (
    "etc/modprobe.d",
    "run/modprobe.d",
    "usr/local/lib/modprobe.d",
    "usr/lib/modprobe.d",
    "lib/modprobe.d",
)
COMMANDS = ("alias", "blacklist", "install", "options", "remove", "softdep")
DISABLED_BY = ("/bin/false", "/bin/true", "/usr/bin/false", "/usr/bin/true")
#: Kernel arguments that keep a module from loading.
CMDLINE_BLACKLISTS = ("modprobe.blacklist", "module_blacklist", "rd.driver.blacklist")


def parse_modprobe(text):
    """(blacklisted modules, {module: {option: value}}, count of lines that are not modprobe commands).

    ``#`` starts a comment (a whole line or the rest of one); ``\\`` at the end of a line continues it.
    ``install <module> /bin/false`` (or ``true``) counts as a blacklist. Module names are given with ``_`` for
    ``-``, as modprobe treats them alike.
    """
    black, opts, bad = set(), {}, 0
    for line in text.replace("\\\n", " ").splitlines():
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if words[0] not in COMMANDS or len(words) < 2:
            bad += 1
            continue
        module = words[1].replace("-", "_")
        if words[0] == "blacklist":
            black.add(module)
        elif words[0] == "options":
            opts.setdefault(module, {}).update(dict(w.partition("=")[::2] for w in words[2:]))
        elif words[0] == "install" and len(words) >= 3 and words[2] in DISABLED_BY:
            black.add(module)
    return black, opts, bad


def modprobe_config(r):
    """``{blacklisted, options, files (module -> files naming it), complete}`` over :data:`MODPROBE_DIRS`."""
    chosen, complete = {}, True
    for d in MODPROBE_DIRS:
        names = r.listdir(d)
        if names is None:
            complete = False
            continue
        for name in names:
            if name.endswith(".conf") and name not in chosen:
                chosen[name] = "%s/%s" % (d, name)
    black, opts, files = set(), {}, {}
    for name in sorted(chosen):
        rel = chosen[name]
        text = r.read(rel)
        if text is None:
            complete = complete and r.absent(rel)
            continue
        b, o, bad = parse_modprobe(text)
        if bad:
            r.problem(rel, "malformed", "%d line(s) are not modprobe commands" % bad)
            complete = False
        black |= b
        for module in sorted(b | set(o)):
            files.setdefault(module, []).append("/" + rel)
        for module, values in o.items():
            opts.setdefault(module, {}).update(values)
    return {"blacklisted": black, "options": opts, "files": files, "complete": complete}


def _config(r):
    return r.memo("modprobe", modprobe_config)


def option_is(r, module, option, value):
    """Whether modprobe.d sets ``option`` of ``module`` to ``value``; None when a file was unreadable."""
    cfg = _config(r)
    if cfg["options"].get(module, {}).get(option) == value:
        return True
    return False if cfg["complete"] else None


def option(r, module, name):
    """The value modprobe.d gives option ``name`` of ``module`` (None when not set)."""
    return _config(r)["options"].get(module, {}).get(name)


def option_known(r):
    """True when every modprobe.d file was read (an option not set is then definitely not set)."""
    return _config(r)["complete"]


def blacklisted(r, facts, module):
    """(by modprobe.d, by a kernel argument, the modprobe.d files naming the module); each tri-state (the files
    None when none was found and a file could not be read). Kernel arguments are compared as the kernel compares
    them (``-`` and ``_`` alike) and repeats of ``modprobe.blacklist`` are already merged (kernel.parse_cmdline)."""
    cfg = _config(r)
    by_modprobe = True if module in cfg["blacklisted"] else (False if cfg["complete"] else None)
    by_cmdline, args = None, facts["cmdline"]["args"]
    if args is not None:
        values = ",".join(str(v) for k, v in args.items() if k.replace("-", "_") in CMDLINE_BLACKLISTS)
        by_cmdline = module in values.replace("-", "_").split(",")
    files = cfg["files"].get(module)
    return by_modprobe, by_cmdline, files or ([] if cfg["complete"] else None)


def is_blacklisted(r, facts, module):
    """Blacklisted by modprobe.d or a kernel argument (tri-state)."""
    by_modprobe, by_cmdline, _files = blacklisted(r, facts, module)
    return tri_any([by_modprobe, by_cmdline])
