# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""YAML from a user, loaded only within bounds: its size, its nesting depth and its size with every alias expanded.

A YAML bomb (aliases of aliases, a billion nodes from a few hundred bytes) or nesting thousands deep would end a
module in MemoryError or RecursionError. :func:`load_bounded` walks the parser's events first (linear in the
text, no recursion, nothing built) and refuses such a document before the loader builds anything. Errors name
the document and the line, never its text (a kubeconfig's text holds secrets).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.errors import ArgumentError

try:
    import yaml

    LOADER = getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader
except ImportError:  # pragma: no cover - PyYAML comes with ansible-core and kubernetes
    yaml = LOADER = None

MAX_BYTES = 4 * 1024 * 1024
MAX_DEPTH = 64
MAX_NODES = 200000


def _where(exc):
    mark = getattr(exc, "problem_mark", None)
    return " at line %d, column %d" % (mark.line + 1, mark.column + 1) if mark else ""


def check_bounds(text, what, max_depth=MAX_DEPTH, max_nodes=MAX_NODES):
    """Raise :class:`ArgumentError` when the YAML ``text`` nests deeper than ``max_depth`` or has more than
    ``max_nodes`` nodes once every alias is expanded."""
    depth, expanded, starts, anchors = 0, 0, [], {}
    for event in yaml.parse(text, Loader=LOADER):
        if isinstance(event, yaml.AliasEvent):
            expanded += anchors.get(event.anchor, 1)
        elif isinstance(event, (yaml.ScalarEvent, yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            expanded += 1
            if isinstance(event, yaml.ScalarEvent):
                if event.anchor:
                    anchors[event.anchor] = 1
            else:
                depth += 1
                starts.append((event.anchor, expanded))
                if depth > max_depth:
                    raise ArgumentError(
                        "%s nests deeper than %d levels at line %d; flatten it (nothing was changed)"
                        % (what, max_depth, event.start_mark.line + 1)
                    )
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1
            anchor, start = starts.pop()
            if anchor:
                anchors[anchor] = expanded - start + 1
        if expanded > max_nodes:
            raise ArgumentError(
                "%s expands to more than %d nodes (aliases of aliases: a YAML bomb?); write it without nested "
                "aliases (nothing was changed)" % (what, max_nodes)
            )


def load_bounded(text, what, max_bytes=MAX_BYTES, max_depth=MAX_DEPTH, max_nodes=MAX_NODES):
    """The object of the YAML document ``text`` (``what`` names it in errors), after :func:`check_bounds`;
    :class:`ArgumentError` for a document over ``max_bytes``, too deep, too large or not valid YAML."""
    if yaml is None:
        raise ArgumentError("PyYAML is needed to read %s; install it on the host that runs the module" % what)
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if len(text) > max_bytes:
        raise ArgumentError("%s is %d bytes, more than %d; pass a smaller document" % (what, len(text), max_bytes))
    try:
        check_bounds(text, what, max_depth, max_nodes)
        return yaml.load(text, Loader=LOADER)  # nosec B506: a safe loader, C or Python
    except yaml.YAMLError as exc:
        raise ArgumentError("%s is not valid YAML%s; fix its syntax" % (what, _where(exc))) from None
