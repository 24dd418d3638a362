"""The house rules of plugins/, read from the source: floors that only import downwards, files and classes of a
readable size, and one shape of main() for every module."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PLUGINS = Path(__file__).resolve().parents[2] / "plugins"
MODULE_UTILS = PLUGINS / "module_utils"
PREFIX = "ansible_collections.gpuops.gpu_operator.plugins.module_utils."

#: The floors of plugins/module_utils, bottom first: a package may import its own floor and those below it.
FLOORS = ("_core", "_clients", "_view", "_operator", "_workflows")
MAX_FILE_LINES = 500
MAX_CLASS_LINES = 300
MAX_PARAMETERS = 6


def python_files(root=PLUGINS):
    return sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def imported_modules(path):
    """Every module named by an import in ``path`` (``from X import y`` gives X and X.y)."""
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module
            yield from (node.module + "." + alias.name for alias in node.names)


def floor_of_import(name):
    if not name.startswith(PREFIX):
        return None
    first = name[len(PREFIX) :].split(".")[0]
    return first if first in FLOORS else None


def floor_violations(root=MODULE_UTILS):
    """``(file, its floor, the higher floor it imports)`` for every import that goes up a floor."""
    found = []
    for path in python_files(root):
        own = path.relative_to(root).parts[0]
        if own not in FLOORS:
            continue
        for name in imported_modules(path):
            target = floor_of_import(name)
            if target and FLOORS.index(target) > FLOORS.index(own):
                found.append((str(path.relative_to(root)), own, target))
    return sorted(set(found))


def test_every_module_util_lives_in_a_floor_package():
    loose = [p.name for p in MODULE_UTILS.glob("*.py") if p.name != "__init__.py"]
    assert loose == [], "put these in one of %s: %s" % (", ".join(FLOORS), loose)
    for floor in FLOORS:
        assert (MODULE_UTILS / floor / "__init__.py").is_file()


def test_no_floor_imports_a_floor_above_it():
    assert floor_violations() == []


def test_the_floor_rule_catches_an_upward_import(tmp_path):
    (tmp_path / "_core").mkdir()
    (tmp_path / "_core" / "bad.py").write_text("from %s_workflows.triage import diagnose\n" % PREFIX)
    (tmp_path / "_workflows").mkdir()
    (tmp_path / "_workflows" / "fine.py").write_text("from %s_core import errors\n" % PREFIX)
    assert floor_violations(tmp_path) == [("_core/bad.py", "_core", "_workflows")]


#: The module documentation strings, which never count towards a file's size (documentation is not cut to fit).
DOC_STRINGS = ("DOCUMENTATION", "EXAMPLES", "RETURN")


def code_lines(source):
    """The lines of ``source`` less those of its DOCUMENTATION, EXAMPLES and RETURN strings."""
    docs = 0
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) in DOC_STRINGS for t in node.targets):
            docs += node.end_lineno - node.lineno + 1
    return len(source.splitlines()) - docs


def test_module_documentation_does_not_count_towards_a_files_size():
    source = 'DOCUMENTATION = r"""\n' + "doc\n" * 600 + '"""\n\nx = 1\n'
    assert code_lines(source) == 2


@pytest.mark.parametrize("path", python_files(), ids=lambda p: str(p.relative_to(PLUGINS)))
def test_no_file_in_plugins_is_over_500_lines_of_code(path):
    lines = code_lines(path.read_text())
    assert lines <= MAX_FILE_LINES, "%s has %d lines of code: split it by responsibility" % (path.name, lines)


@pytest.mark.parametrize("path", python_files(), ids=lambda p: str(p.relative_to(PLUGINS)))
def test_no_class_in_plugins_is_over_300_lines(path):
    tree = ast.parse(path.read_text(), str(path))
    big = [
        (node.name, node.end_lineno - node.lineno + 1)
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef) and node.end_lineno - node.lineno + 1 > MAX_CLASS_LINES
    ]
    assert big == [], "classes over %d lines in %s: %s" % (MAX_CLASS_LINES, path.name, big)


def parameter_counts(source):
    """``(function, parameters)`` for every function in ``source``; a method's ``self`` or ``cls`` is not counted."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            names = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
            names += [a.arg for a in (args.vararg, args.kwarg) if a]
            if names and names[0] in ("self", "cls"):
                names = names[1:]
            yield node.name, len(names)


def test_the_parameter_count_leaves_out_self_and_counts_keyword_only_ones():
    source = "class A:\n    def m(self, a, *, b, **c):\n        pass\n\ndef f(a, b=1):\n    pass\n"
    assert dict(parameter_counts(source)) == {"m": 3, "f": 2}


@pytest.mark.parametrize("path", python_files(), ids=lambda p: str(p.relative_to(PLUGINS)))
def test_no_function_in_plugins_takes_more_than_6_parameters(path):
    many = [(name, n) for name, n in parameter_counts(path.read_text()) if n > MAX_PARAMETERS]
    assert many == [], "functions of %s with over %d parameters (group them in an options object): %s" % (
        path.name,
        MAX_PARAMETERS,
        many,
    )


@pytest.mark.parametrize("path", python_files(PLUGINS / "modules"), ids=lambda p: p.stem)
def test_every_module_main_is_one_call_to_run_module(path):
    tree = ast.parse(path.read_text(), str(path))
    main = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main")
    assert len(main.body) == 1, "main() of %s does more than call run_module" % path.stem
    call = main.body[0].value
    assert isinstance(call, ast.Call) and getattr(call.func, "id", None) == "run_module"


def test_every_module_util_starts_with_the_private_banner():
    missing = [
        str(p.relative_to(PLUGINS))
        for p in python_files(MODULE_UTILS)
        if "private to the gpuops.gpu_operator collection" not in p.read_text()[:800].lower()
    ]
    assert missing == []
