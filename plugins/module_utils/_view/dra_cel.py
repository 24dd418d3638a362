# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The subset of CEL that DRA device selectors use, evaluated against one published device (pure).

Enough to tell which devices a DeviceClass or a claim's selector picks: ``device.driver``,
``device.attributes['domain'].name`` (or ``['name']``), ``device.capacity['domain'].name``, string, int and bool
literals, ``== != < <= > >=``, ``&& || !``, parentheses, ``has(...)``, ``in [..]``, the string methods
``startsWith``, ``endsWith``, ``contains``, ``matches``, and ``semver('1.2.3')`` / ``quantity('40Gi')`` with
``compareTo``, ``isGreaterThan``, ``isLessThan``. Anything else raises :class:`Unsupported`, so a caller says
"cannot evaluate" instead of guessing. A missing attribute makes the expression false for that device (the
scheduler reports a runtime error and does not allocate it either).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

_TOKEN = re.compile(
    r"\s*(?:(?P<str>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")|(?P<num>\d+)|(?P<op>&&|\|\||==|!=|<=|>=|[<>!().,\[\]])"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*))"
)
_SUFFIXES = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "m": 0.001}
_SUFFIXES.update({"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15})


class Unsupported(Exception):
    """The expression uses CEL this evaluator does not know."""


class _Missing(Exception):
    """A key the device does not have (false for this device)."""


class Version:
    """A semver value, compared by its numeric parts (``570.124.6`` > ``570.86.15``)."""

    def __init__(self, text):
        self.text = str(text)
        core = self.text.split("-", 1)[0].split("+", 1)[0]
        self.key = tuple(int(p) if p.isdigit() else 0 for p in core.split("."))

    def __eq__(self, other):
        return isinstance(other, Version) and self.key == other.key

    def __lt__(self, other):
        return self.key < other.key

    def __hash__(self):
        return hash(self.key)


def quantity(text):
    """A Kubernetes quantity (``"80Gi"``, ``"1500m"``, ``"10200547328"``) as a number; raises ValueError."""
    match = re.match(r"^\s*([0-9.]+)\s*([A-Za-z]*)\s*$", str(text))
    if not match or (match.group(2) and match.group(2) not in _SUFFIXES):
        raise ValueError("not a quantity: %r" % (text,))
    number = float(match.group(1)) * _SUFFIXES.get(match.group(2), 1)
    return int(number) if number == int(number) else number


def plain_value(attr):
    """A published attribute (``{"string": ..}``, ``{"int": ..}``, ``{"bool": ..}``, ``{"version": ..}``) as a plain
    value (a version as its text); None when it has none of these."""
    for kind in ("string", "int", "bool", "version"):
        if kind in (attr or {}):
            return attr[kind]
    return None


def attribute_value(attr):
    """A published attribute as CEL sees it: a version as a :class:`Version`, anything else plain."""
    value = plain_value(attr)
    return Version(value) if "version" in (attr or {}) else value


def _tokens(text):
    out, pos = [], 0
    text = text.strip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if not match or match.end() == pos:
            raise Unsupported("cannot read %r" % text[pos:])
        pos = match.end()
        kind = match.lastgroup
        value = match.group(kind)
        if kind == "str":
            value = value[1:-1].replace("\\'", "'").replace('\\"', '"')
        out.append((kind, value))
    return out


class _Parser:
    """Recursive descent over the tokens, building nested tuples (``("and", a, b)``, ``("cmp", op, a, b)``, ...)."""

    def __init__(self, text):
        self.toks, self.i = _tokens(text), 0

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else (None, None)

    def take(self, value=None):
        tok = self.peek()
        if tok[0] is None or (value is not None and tok[1] != value):
            raise Unsupported("expected %r, found %r" % (value, tok[1]))
        self.i += 1
        return tok

    def parse(self):
        tree = self.disjunction()
        if self.i != len(self.toks):
            raise Unsupported("unexpected %r" % (self.peek()[1],))
        return tree

    def _chain(self, token, op, operand):
        """``operand (token operand)*`` as nested ``(op, left, right)``, left to right."""
        left = operand()
        while self.peek() == ("op", token):
            self.take()
            left = (op, left, operand())
        return left

    def disjunction(self):
        return self._chain("||", "or", self.conjunction)

    def conjunction(self):
        return self._chain("&&", "and", self.comparison)

    def comparison(self):
        left = self.unary()
        kind, value = self.peek()
        if kind == "op" and value in ("==", "!=", "<", "<=", ">", ">="):
            self.take()
            return ("cmp", value, left, self.unary())
        if (kind, value) == ("name", "in"):
            self.take()
            return ("in", left, self.unary())
        return left

    def unary(self):
        if self.peek() == ("op", "!"):
            self.take()
            return ("not", self.unary())
        return self.postfix(self.primary())

    def primary(self):
        kind, value = self.take()
        if kind == "str":
            return ("lit", value)
        if kind == "num":
            return ("lit", int(value))
        if (kind, value) == ("op", "("):
            inner = self.disjunction()
            self.take(")")
            return inner
        if (kind, value) == ("op", "["):
            items = []
            while self.peek() != ("op", "]"):
                items.append(self.disjunction())
                if self.peek() == ("op", ","):
                    self.take()
            self.take("]")
            return ("list", items)
        if kind == "name" and value in ("true", "false"):
            return ("lit", value == "true")
        if kind == "name" and value in ("has", "semver", "quantity"):
            self.take("(")
            arg = self.disjunction()
            self.take(")")
            return (value, arg)
        if (kind, value) == ("name", "device"):
            return ("device",)
        raise Unsupported("unknown name %r" % value)

    def postfix(self, node):
        while self.peek() in (("op", "."), ("op", "[")):
            if self.take()[1] == "[":
                key = self.disjunction()
                self.take("]")
                node = ("index", node, key)
                continue
            name = self.take()[1]
            if self.peek() == ("op", "("):
                self.take()
                args = [] if self.peek() == ("op", ")") else [self.disjunction()]
                self.take(")")
                node = ("call", node, name, args)
            else:
                node = ("index", node, ("lit", name))
        return node


def parse(expression):
    """The expression's tree; raises :class:`Unsupported`."""
    return _Parser(expression or "").parse()


def _device_root(device, driver):
    """``device`` as CEL sees it: driver, attributes and capacity by domain (unqualified names in the driver's)."""
    attrs, caps = {}, {}
    for source, target, convert in (("attributes", attrs, attribute_value), ("capacity", caps, None)):
        for name, raw in (device.get(source) or {}).items():
            domain, _sep, short = name.rpartition("/")
            value = convert(raw) if convert else _capacity(raw)
            target.setdefault(domain or driver, {})[short] = value
    return {"driver": driver, "attributes": attrs, "capacity": caps}


def _capacity(raw):
    try:
        return quantity((raw or {}).get("value"))
    except ValueError:
        return (raw or {}).get("value")


_METHODS = {
    "startsWith": lambda a, b: str(a).startswith(b),
    "endsWith": lambda a, b: str(a).endswith(b),
    "contains": lambda a, b: b in str(a),
    "matches": lambda a, b: re.search(b, str(a)) is not None,
    "compareTo": lambda a, b: (a > b) - (a < b),
    "isGreaterThan": lambda a, b: a > b,
    "isLessThan": lambda a, b: a < b,
}


def _eval(node, root):
    op = node[0]
    if op == "lit":
        return node[1]
    if op == "device":
        return root
    if op == "list":
        return [_eval(n, root) for n in node[1]]
    if op in ("and", "or"):
        left = _bool(node[1], root)
        if left == (op == "or"):
            return left
        return _bool(node[2], root)
    if op == "not":
        return not _bool(node[1], root)
    if op == "has":
        try:
            _eval(node[1], root)
        except _Missing:
            return False
        return True
    if op == "semver":
        return Version(_eval(node[1], root))
    if op == "quantity":
        return quantity(_eval(node[1], root))
    if op == "index":
        container, key = _eval(node[1], root), _eval(node[2], root)
        if not isinstance(container, dict):
            raise Unsupported("cannot index %r" % (container,))
        if key not in container:
            raise _Missing(key)
        return container[key]
    if op == "in":
        return _eval(node[1], root) in _eval(node[2], root)
    if op == "call":
        if node[2] not in _METHODS:
            raise Unsupported("unknown method %s()" % node[2])
        return _METHODS[node[2]](_eval(node[1], root), *[_eval(a, root) for a in node[3]])
    left, right = _eval(node[2], root), _eval(node[3], root)
    try:
        return {
            "==": lambda: left == right,
            "!=": lambda: left != right,
            "<": lambda: left < right,
            "<=": lambda: left < right or left == right,
            ">": lambda: right < left,
            ">=": lambda: right < left or left == right,
        }[node[1]]()
    except TypeError:
        raise Unsupported("cannot compare %r with %r" % (left, right)) from None


def _bool(node, root):
    value = _eval(node, root)
    if not isinstance(value, bool):
        raise Unsupported("not a condition: %r" % (value,))
    return value


def matches(expression, device, driver):
    """True/False: the CEL ``expression`` selects ``device`` (a published device dict of ``driver``).

    Raises :class:`Unsupported` for CEL outside the subset this module knows.
    """
    tree = parse(expression)
    try:
        return _bool(tree, _device_root(device, driver))
    except _Missing:
        return False
