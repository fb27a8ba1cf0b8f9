"""attnlab's modules import one way: config -> layers -> models -> storage -> features -> faces.

Every module of attnlab/ is parsed (no import runs); every import statement counts, at the top of the file or
inside a function. `from attnlab import x` counts as importing the submodule attnlab.x when x is one, else the
package attnlab itself. Two properties are checked:
- no cycle between modules (Python's implicit import of a parent package's __init__ is not counted);
- no import reaches a higher layer than the importer's own (the table below names the layer of every module;
  a new module must be placed in it, so the decision is made on purpose).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "attnlab"

# layer of each module or package, longest dotted prefix wins; the order is the order data flows in
LAYERS = ["base", "config", "layers", "models", "storage", "features", "faces"]
LAYER_OF = {
    "attnlab.errors": "base", "attnlab.files": "base", "attnlab.spelling": "base",
    "attnlab.extras": "base",  # optional packages imported where needed, the missing one named with its extra
    "attnlab.config": "config", "attnlab.presets": "config",
    "attnlab.parameter_count": "config",  # the exact parameter count from a config alone (no torch)
    "attnlab.checkpoint_config": "config",  # a checkpoint's config.json read without torch
    "attnlab.devices": "base",  # the one check of a device name, shared by training and the commands
    "attnlab.heap": "base",  # freed C-heap pages handed back (malloc_trim), after tokenizer training and encoding
    # what layers write to while they run: the recorder and the KV cache
    "attnlab.recording": "layers", "attnlab.cache": "layers", "attnlab.layers": "layers",
    "attnlab.models": "models", "attnlab.build": "models",
    "attnlab.quantize_options": "models",  # the schemes by name (none/int8/int4), shared by both faces
    "attnlab.quantization": "models",  # swaps a model's Linears for attnlab.layers.quantized; GGUF loading uses it
    "attnlab.storage": "storage", "attnlab.interop": "storage", "attnlab.loading": "storage",
    "attnlab.interop.gguf_file": "storage",  # a GGUF file's header, metadata and tensor table (numpy, struct)
    # a checkpoint carries its tokenizer: reading one is storage, training one is data (a feature) that uses it
    "attnlab.vocabulary": "storage",  # which text a loaded tokenizer turns into [UNK]
    "attnlab.names": "storage",  # one name per model: shipped checkpoints, pretrained packages, presets
    "attnlab.data.tokenizers": "storage", "attnlab.data.packages": "storage",
    "attnlab.generation": "features", "attnlab.training": "features", "attnlab.cost": "features",
    "attnlab.data": "features", "attnlab.counting": "features", "attnlab.objectives": "features",
    "attnlab.threads": "features",  # how many torch threads generation and training use (a measured policy)
    "attnlab.interventions": "features",  # what reads or changes the forward: edits, sweeps, readouts, attribution
    "attnlab.evaluation": "features",  # perplexity and top-1 agreement of a model on a token sequence
    "attnlab": "faces", "attnlab.__main__": "faces", "attnlab.cli": "faces", "attnlab.explorer": "faces",
    "attnlab.benchmarks": "faces",  # timing attnlab against its peers: above everything it times
}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def is_module(name: str) -> bool:
    return name in MODULES


def layer(module: str) -> str | None:
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in LAYER_OF:
            return LAYER_OF[".".join(parts[:n])]
    return None


def imports_of(module: str) -> dict[str, int]:
    """attnlab modules `module` imports -> the line of the first such import."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: dict[str, int] = {}

    def add(target: str, line: int) -> None:
        if target.split(".")[0] != "attnlab":
            return
        while target not in MODULES and "." in target:  # attnlab.x.function -> attnlab.x
            target = target.rpartition(".")[0]
        if target != module:
            found.setdefault(target, line)

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from . import x / from .y import z
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                candidate = f"{source}.{alias.name}"
                add(candidate if is_module(candidate) else source, node.lineno)
    return found


GRAPH = {m: imports_of(m) for m in MODULES}


def strongly_connected(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Tarjan's algorithm: the groups of modules that reach each other (iterative: no recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return groups


def cycle_in(group: list[str]) -> list[str]:
    """One concrete cycle through the group's first module, for the failure message."""
    members, start = set(group), group[0]
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        node = frontier.pop(0)
        for child in GRAPH[node]:
            if child == start:
                return paths[node] + [start]
            if child in members and child not in paths:
                paths[child] = paths[node] + [child]
                frontier.append(child)
    return group


def test_every_module_has_a_layer():
    assert [m for m in MODULES if layer(m) is None] == []


def test_no_import_cycles():
    described = []
    for group in strongly_connected(GRAPH):
        path = cycle_in(group)
        steps = [f"{a} (line {GRAPH[a][b]})" for a, b in zip(path, path[1:], strict=False)]
        described.append(" -> ".join(steps + [path[-1]]))
    assert described == [], "import cycles:\n" + "\n".join(described)


def test_no_upward_imports():
    upward = [f"{m} ({layer(m)}) imports {t} ({layer(t)}) at line {line}"
              for m, targets in GRAPH.items() for t, line in targets.items()
              if layer(m) and layer(t) and LAYERS.index(layer(t)) > LAYERS.index(layer(m))]
    assert upward == [], "imports reaching a higher layer:\n" + "\n".join(upward)


def test_the_checker_sees_function_level_and_from_imports(tmp_path):
    """The parser is not blind: the imports it must find in known files are found."""
    assert "attnlab.models.base" in GRAPH["attnlab.models.decoder"]
    assert "attnlab.recording" in GRAPH["attnlab.layers.attention"]  # `from attnlab import recording`
    assert "attnlab.storage" in GRAPH["attnlab.loading"]
    assert strongly_connected({"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {"a": 1}}) == [["a", "b", "c"]]


@pytest.mark.parametrize("module", ["attnlab.models.base", "attnlab.storage", "attnlab.loading"])
def test_storage_and_models_stay_below_training(module):
    assert not [t for t in GRAPH[module] if t.startswith(("attnlab.training", "attnlab.generation"))]


# the one place a face may reach the other: `attnlab explore` (a command) starts the explorer's server
FACE_BRIDGES = {("attnlab.cli.explore", "attnlab.explorer.server.registry"),
                ("attnlab.cli.explore", "attnlab.explorer.server.app"),
                ("attnlab.cli.explore", "attnlab.explorer.server.classroom")}  # --class: the token printed at start


def test_one_face_never_imports_the_other():
    """cli and explorer are two faces over the same library: what both need lives below them (quantize_options,
    ...). The layer table cannot see this (both are faces), so it is checked here: the explorer never imports the
    command line, and the command line reaches the explorer only where `attnlab explore` starts it."""
    crossing = [f"{m} imports {t} at line {line}" for m, targets in GRAPH.items() for t, line in targets.items()
                if (m.startswith("attnlab.explorer") and t.startswith("attnlab.cli"))
                or (m.startswith("attnlab.cli") and t.startswith("attnlab.explorer") and (m, t) not in FACE_BRIDGES)]
    assert crossing == [], "a face importing another face:\n" + "\n".join(crossing)
    assert "attnlab.explorer.server.registry" in GRAPH["attnlab.cli.explore"]  # the checker sees the bridge it allows


def private_imports(module: str, source: str | None = None) -> list[str]:
    """Names with one leading underscore that `module` takes from another attnlab module: `from attnlab.x import
    _y`, and `m._y` where m is an attnlab module it imported (`from attnlab import m`, `import attnlab.m as m`)."""
    path = MODULES.get(module)
    tree = ast.parse(source if source is not None else path.read_text())
    private = lambda name: name.startswith("_") and not name.startswith("__")  # noqa: E731
    found, aliases = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").split(".")[0] == "attnlab"):
            for alias in node.names:
                if private(alias.name):
                    found.append(f"{module} line {node.lineno}: from {node.module} import {alias.name}")
                elif is_module(f"{node.module}.{alias.name}"):
                    aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "attnlab" and alias.asname:
                    aliases[alias.asname] = alias.name
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and private(node.attr) and isinstance(node.value, ast.Name)
                and node.value.id in aliases and aliases[node.value.id] != module):
            found.append(f"{module} line {node.lineno}: {aliases[node.value.id]}.{node.attr}")
    return found


def test_no_module_uses_another_modules_private_name():
    """An underscore says "only this module uses it": what several modules share has a public name in the module
    that owns it, so a reader knows what they may change without looking for callers elsewhere."""
    found = [line for m in MODULES for line in private_imports(m)]
    assert found == [], "private names used across modules:\n" + "\n".join(found)


def test_the_private_name_check_sees_both_forms():
    source = "from attnlab.readouts import _lm_parts\nfrom attnlab import threads\nthreads._cpu_name()\n"
    assert len(private_imports("attnlab.cost.peak", source)) == 2
    assert private_imports("attnlab.cost.peak", "from attnlab.threads import choose\nx._y\n") == []


EXPLORER_VIEWS = "attnlab.explorer.views"


def test_a_router_imports_no_other_router_and_the_machinery_no_view():
    """The explorer's layout (explorer/views/__init__.py): a view's router imports its own view, the machinery
    (explorer/server) and the library, never another router; the machinery imports no view, except the app, which
    includes every view's router."""
    routers = [m for m in MODULES if m.startswith(EXPLORER_VIEWS) and m.rsplit(".", 1)[-1] == "routes"]
    assert len(routers) >= 19, routers  # every tab and every Experiments view has one
    wrong = [f"{m} imports {t}" for m in routers for t in GRAPH[m] if t in routers and t != m]
    wrong += [f"{m} imports {t}" for m in MODULES if m.startswith("attnlab.explorer.server")
              and m != "attnlab.explorer.server.app" for t in GRAPH[m] if t.startswith(EXPLORER_VIEWS)]
    assert wrong == [], "\n".join(wrong)
