# SPDX-License-Identifier: GPL-3.0-or-later
"""The layout docs/architecture.md draws holds: layers import only downward, no import cycle,
no folder over 15 modules (operators and panels, one a file, may hold more), no module over 900
lines, and the maths never imports Blender."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: Lower layers first; a module may import its own layer or the ones before it.
LAYERS = ("limits", "rig.io", "rig.live", "rig.tasks", "batch", "ui", "cli", "api", "")
OWN_FILE_FOLDERS = {"ui/operators", "ui/panels"}


def _modules():
    """``{dotted name: (path, is package)}`` of the extension's modules (the root is ``""``)."""
    found = {}
    for path in ROOT.rglob("*.py"):
        parts = path.relative_to(ROOT).parts
        if parts[0] in {"tests", "bench", "tools"} or any(p.startswith(".") for p in parts):
            continue
        package = path.name == "__init__.py"
        found[".".join(parts[:-1] if package else (*parts[:-1], path.stem))] = (path, package)
    return found


def _imports(modules):
    """``{module: {modules it imports}}``, relative imports resolved (in functions too)."""
    edges = {}
    for name, (path, package) in modules.items():
        base = name.split(".") if name else []
        if not package:
            base = base[:-1]
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level:
                parent = base[: len(base) - (node.level - 1)]
                target = ".".join(parent + ([node.module] if node.module else []))
                for alias in node.names:
                    child = f"{target}.{alias.name}" if target else alias.name
                    found.add(child if child in modules else target)
        edges[name] = found & set(modules)
    return edges


def _layer(name):
    return next(i for i, layer in enumerate(LAYERS) if name == layer or name.startswith(layer + ".") or not layer)


@pytest.fixture(scope="module")
def graph():
    modules = _modules()
    return modules, _imports(modules)


def test_layers_import_only_downward(graph):
    _, edges = graph
    upward = [f"{a} -> {b}" for a, targets in edges.items() for b in targets if _layer(b) > _layer(a)]
    assert not upward, upward


def test_no_import_cycle(graph):
    _, edges = graph
    state, cycles = {}, []

    def visit(node, path):
        state[node] = "open"
        for target in edges[node]:
            if state.get(target) == "open":
                cycles.append(path[path.index(target) :] + [target])
            elif target not in state:
                visit(target, path + [target])
        state[node] = "done"

    for node in edges:
        if node not in state:
            visit(node, [node])
    assert not cycles, cycles


def test_the_maths_never_imports_blender(graph):
    modules, _ = graph
    for name, (path, _) in modules.items():
        if name.split(".")[0] != "limits":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and not getattr(node, "level", 0):
                roots = (
                    [a.name.split(".")[0] for a in node.names] if isinstance(node, ast.Import) else [node.module.split(".")[0]]
                )
                assert not {"bpy", "mathutils", "bmesh", "gpu"} & set(roots), f"{path.relative_to(ROOT)} imports {roots}"


def test_folders_and_modules_stay_small(graph):
    modules, _ = graph
    per_folder = {}
    for path, package in modules.values():
        if not package:
            per_folder.setdefault(path.parent.relative_to(ROOT).as_posix(), []).append(path.name)
        lines = len(path.read_text(encoding="utf-8").splitlines())
        assert lines <= 900, f"{path.relative_to(ROOT)} has {lines} lines"
    crowded = {folder: len(files) for folder, files in per_folder.items() if len(files) > 15 and folder not in OWN_FILE_FOLDERS}
    assert not crowded, crowded
    assert {path.name for path, _ in modules.values() if path.parent == ROOT} == {"__init__.py", "api.py"}
