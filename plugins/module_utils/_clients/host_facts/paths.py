# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""Path resolution confined to a host root, as ``chroot`` would resolve it.

A root-relative path is walked one component at a time with ``lstat``: a link's target is read with
``readlink`` and walked in its place, an absolute target from the root (re-rooted), ``..`` never above the root
(clamped), at most :data:`MAX_LINKS` links per path (a loop). Nothing outside the root is ever opened, listed,
stat'ed or read: the host path handed to ``open`` or ``listdir`` has no link left in it.

:meth:`Paths.walk` answers a :class:`Walk`: the resolved root-relative path (``""`` is the root) or why there is
none, and the links on the way that climbed above the root.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os
import stat

#: Links followed in one path before it counts as a loop (Linux's MAXSYMLINKS).
MAX_LINKS = 40
ABSENT = (errno.ENOENT, errno.ENOTDIR)
_LINK, _DIR, _OTHER, _ABSENT, _ERROR = "link", "dir", "other", "absent", "error"


class Walk(object):
    """Where a path leads: ``path`` (root-relative, no link in it) or None with ``failure``, a tuple ``(reason,
    source, detail)``: ``absent``, ``dangling`` (a link points nowhere; ``source`` is the link), ``loop`` or
    ``unreadable``; ``outside`` lists ``(link, target)`` of links whose ``..`` climbed above the root (clamped)."""

    __slots__ = ("path", "failure", "outside")

    def __init__(self, path, failure=None, outside=()):
        self.path, self.failure, self.outside = path, failure, tuple(outside)


class Paths(object):
    """Resolves root-relative paths inside ``root``; each ``lstat`` is made once per collection."""

    def __init__(self, root):
        self.root = root
        self._prefix = root.rstrip("/") + "/"
        self._kinds = {}
        self._walks = {}

    def host(self, path):
        """The host path of a resolved root-relative ``path``."""
        return self._prefix + path if path else self.root

    def kind(self, path):
        """``(kind, detail)`` of resolved ``path`` not following a last link: (``link``, target), (``dir``, None),
        (``other``, None), (``absent``, strerror) or (``error``, strerror)."""
        if path not in self._kinds:
            try:
                st = os.lstat(self.host(path))
                if stat.S_ISLNK(st.st_mode):
                    self._kinds[path] = (_LINK, os.readlink(self.host(path)))
                else:
                    self._kinds[path] = (_DIR if stat.S_ISDIR(st.st_mode) else _OTHER, None)
            except OSError as exc:
                self._kinds[path] = (_ABSENT if exc.errno in ABSENT else _ERROR, exc.strerror)
        return self._kinds[path]

    def walk(self, rel, follow=True):
        """The :class:`Walk` of root-relative ``rel``; with ``follow`` False a last component that is a link is
        the answer itself (``lstat``/``readlink`` semantics)."""
        key = (rel, follow)
        walk = self._walks.get(key)
        if walk is None:
            parent, _sep, name = rel.rpartition("/")
            base = self.walk(parent) if parent.strip("/") else _ROOT
            walk = base if base.path is None else self._step(base, name, follow)
            self._walks[key] = walk
        return walk

    def _step(self, base, name, follow):
        """The walk of one more component ``name`` from the resolved ``base``."""
        path = base.path + "/" + name if base.path else name
        kind = self.kind(path)[0]
        if kind in (_DIR, _OTHER) or kind == _LINK and not follow:
            return Walk(path, None, base.outside)
        return self._steps(base.path, [name], follow, base.outside)

    def _steps(self, done, todo, follow, outside):
        """Walk the components ``todo`` (a stack) from the resolved directory ``done``."""
        todo, outside = [p for p in todo if p and p != "."], list(outside)
        hops, links = 0, []  # links: (link, target, depth of todo when it was entered)
        while todo:
            part = todo.pop()
            while links and len(todo) < links[-1][2]:
                links.pop()  # every component of that link's target is walked
            if part == "..":
                if not done and links:
                    outside.append(links[-1][:2])
                done = done.rpartition("/")[0]
                continue
            path = done + "/" + part if done else part
            kind, detail = self.kind(path)
            if kind == _LINK and (todo or follow):
                hops += 1
                if hops > MAX_LINKS:
                    return Walk(None, ("loop", path, "more than %d links: a loop" % MAX_LINKS), outside)
                links.append((path, detail, len(todo)))
                todo.extend(_components(detail))
                done = "" if detail.startswith("/") else done
                continue
            if kind == _ERROR:
                return Walk(None, ("unreadable", path, detail), outside)
            if kind == _ABSENT or todo and kind != _DIR:
                if links:
                    link, target = links[-1][:2]
                    return Walk(None, ("dangling", link, "links to %s" % target), outside)
                return Walk(None, ("absent", path, detail or os.strerror(errno.ENOTDIR)), outside)
            done = path
        return Walk(done, None, outside)


_ROOT = Walk("")


def _components(path):
    """The components of ``path`` in reverse (a stack), without empty ones and ``.``."""
    return [p for p in reversed(path.split("/")) if p and p != "."]
