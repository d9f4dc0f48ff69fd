"""The house rules that a reading of the code can check (docs/architecture.md).

Which package may import which (no package cycle, no module cycle), the speed wing
reached through its seam only, and no module over 600 lines. Every import counts,
also one inside a function or under ``TYPE_CHECKING``: the rule is about what a module
knows, not about when it loads it.

A rule broken where another piece of work is still under way is listed below as a
known exception, by name, with its reason and owner: the rule holds everywhere else,
and the exception fails the test once it is no longer true (remove it then).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
DOC = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"
PACKAGE = "convodex"
MAX_LINES = 600

# What each part of the library may import besides itself (a part: a package of
# ``convodex`` or one of its top-level modules; ``convodex`` itself is the public
# API). Lowest first: nothing imports a part listed after it but a surface.
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "models": set(),
    "team_models": {"models"},  # the server's and the hub's answers
    "sqlite": set(),
    "config": {"errors"},
    "text": {"errors"},  # pure: the one exception tree and nothing else
    "sources": {"config", "errors", "models", "sqlite", "text"},
    "semantic": {"config", "errors"},  # the embedding model: texts in, vectors out
    "hints": {"errors"},
    "writer": {"errors", "hints"},
    "catalog": {"config", "errors", "hints", "models", "semantic", "sources", "sqlite", "text"},
    "sessions": {"catalog", "config", "errors", "models", "sources", "text"},
    "server": {"config", "errors", "models", "team_models", "sqlite", "text"},
    "recall": {"catalog", "config", "errors", "models", "sources", "text"},
    "agents": {"config", "errors"},  # agents' own config files: edited, never searched
    "hub": {"catalog", "config", "errors", "models", "team_models", "sessions", "text"},
    PACKAGE: {"catalog", "config", "errors", "models", "sessions", "sources", "text"},
}
LIBRARY = set(ALLOWED)
# Surfaces parse, call the library and print; the CLI also starts the others.
SURFACES = {"cli", "web", "tui", "mcp", "mcp_memory", "mcp_compact", "warm", "__main__"}
ALLOWED.update(
    {
        "web": LIBRARY,
        "tui": LIBRARY,
        "mcp": LIBRARY | {"mcp_memory", "mcp_compact"},  # tools and hits beside the server
        "mcp_memory": LIBRARY,
        "mcp_compact": LIBRARY | {"mcp_memory"},
        "warm": LIBRARY,
        "cli": LIBRARY | SURFACES,
        "__main__": {"cli", "warm"},  # a short command asks a warm service first
    }
)

# Known exceptions: (importer part, imported part) -> why, and whose work removes it.
KNOWN_IMPORTS: dict[tuple[str, str], str] = {}
# Module cycles still there: the modules of the cycle -> why, and whose work removes it.
KNOWN_CYCLES: dict[frozenset[str], str] = {}
# Modules still over MAX_LINES: path under src/convodex -> why, and whose work splits it.
KNOWN_LONG: dict[str, str] = {}

# The speed wing (``catalog/speed``) is reached through its seam: the rest of the
# catalog imports only these of its modules (the search workers run the core's
# searches, so the service starts them and hands them to the wing).
SPEED = f"{PACKAGE}.catalog.speed"
SEAM = {f"{SPEED}.wing", f"{SPEED}.settings", f"{SPEED}.workers"}


@cache
def modules() -> dict[str, Path]:
    """Every module of the package by dotted name."""
    found: dict[str, Path] = {}
    for path in sorted((SRC / PACKAGE).rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _resolve(name: str) -> str | None:
    """The module an import names (``from a.b import c``: ``a.b.c`` or ``a.b``)."""
    known = modules()
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


@cache
def imports() -> dict[str, frozenset[str]]:
    """Each module's imports of other modules of the package."""
    out: dict[str, frozenset[str]] = {}
    for name, path in modules().items():
        found: set[str] = set()
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, base] if base else up)
                targets = [f"{base}.{alias.name}" for alias in node.names]
            for target in targets:
                resolved = _resolve(target) if target.startswith(PACKAGE) else None
                if resolved is not None and resolved != name:
                    found.add(resolved)
        out[name] = frozenset(found)
    return out


def part(module: str) -> str:
    pieces = module.split(".")
    return pieces[1] if len(pieces) > 1 else PACKAGE


def _cycles(graph: dict[str, frozenset[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            step = next(edges, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = counter
                    counter += 1
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(sorted(graph.get(step, ())))))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component: set[str] = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def test_every_part_of_the_package_has_a_place_in_the_layers() -> None:
    unplaced = sorted({part(m) for m in modules()} - set(ALLOWED))
    assert not unplaced, (
        f"place {unplaced} in ALLOWED here and in docs/architecture.md: what may it import?"
    )


def test_no_part_imports_one_it_may_not() -> None:
    broken: dict[tuple[str, str], list[str]] = {}
    for module, targets in imports().items():
        for target in targets:
            edge = (part(module), part(target))
            if edge[0] != edge[1] and edge[1] not in ALLOWED.get(edge[0], set()):
                broken.setdefault(edge, []).append(f"{module} -> {target}")
    unexpected = {edge: where for edge, where in broken.items() if edge not in KNOWN_IMPORTS}
    assert not unexpected, f"imports the layers forbid: {unexpected}"
    gone = sorted(set(KNOWN_IMPORTS) - set(broken))
    assert not gone, f"known exceptions that no longer happen (remove them): {gone}"


def test_the_library_never_imports_a_surface() -> None:
    for module, targets in imports().items():
        if part(module) in LIBRARY:
            assert not {part(t) for t in targets} & SURFACES, module


def test_there_is_no_import_cycle_between_parts_or_modules() -> None:
    parts: dict[str, set[str]] = {}
    for module, targets in imports().items():
        importer = part(module)
        parts.setdefault(importer, set()).update(
            part(t) for t in targets if (importer, part(t)) not in KNOWN_IMPORTS
        )
    graph = {name: frozenset(t - {name}) for name, t in parts.items()}
    assert _cycles(graph) == [], "a cycle between packages"
    cycles = _cycles(imports())
    unexpected = [sorted(c) for c in cycles if c not in KNOWN_CYCLES]
    assert not unexpected, f"module import cycles: {unexpected}"
    gone = [sorted(c) for c in KNOWN_CYCLES if c not in cycles]
    assert not gone, f"known cycles that are gone (remove them): {gone}"


def test_the_core_reaches_the_speed_wing_through_its_seam() -> None:
    catalog = f"{PACKAGE}.catalog"
    for module, targets in imports().items():
        if module.startswith(f"{catalog}.") and not module.startswith(SPEED):
            wing = {t for t in targets if t.startswith(SPEED)}
            assert wing <= SEAM, f"{module} imports {sorted(wing - SEAM)}: use the Wing's hooks"


def test_no_module_is_over_600_lines() -> None:
    lengths = {
        str(path.relative_to(SRC / PACKAGE)): len(path.read_text(encoding="utf-8").splitlines())
        for path in modules().values()
    }
    long = {name: n for name, n in lengths.items() if n > MAX_LINES}
    unexpected = {name: n for name, n in long.items() if name not in KNOWN_LONG}
    assert not unexpected, f"modules over {MAX_LINES} lines (split them by concept): {unexpected}"
    gone = sorted(set(KNOWN_LONG) - set(long))
    assert not gone, f"known long modules that are short now (remove them): {gone}"


def test_every_module_has_its_entry_in_the_architecture_doc() -> None:
    text = DOC.read_text(encoding="utf-8")
    index = text[text.index("\n## Every module\n") :]
    listed = set(re.findall(r"^- `([\w/]+\.py)`: \S", index, flags=re.MULTILINE))
    tree = {
        str(path.relative_to(SRC / PACKAGE))
        for path in modules().values()
        if path.name != "__init__.py"
    }
    assert not tree - listed, f"add these to docs/architecture.md: {sorted(tree - listed)}"
    assert not listed - tree, f"gone from the tree (remove them): {sorted(listed - tree)}"


# What a reader is called where one is used: a format object, a table of them.
READER_NAMES = re.compile(r"fmt|format|reader", re.IGNORECASE)


def test_no_reader_hook_is_probed_by_name() -> None:
    """A reader's optional hooks have typed defaults on ``SourceFormat``: a caller
    uses them directly, where strict typing sees them, never ``getattr``/``hasattr``."""
    probes = []
    for name, path in modules().items():
        source = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(source)):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "hasattr")
                and node.args
                and READER_NAMES.search(ast.get_source_segment(source, node.args[0]) or "")
            ):
                probes.append(f"{name}:{node.lineno}")
    assert not probes, f"reader hooks probed by name (give SourceFormat a default): {probes}"


def test_every_registered_format_is_a_source_format_of_its_name() -> None:
    from convodex.sources.base import SourceFormat
    from convodex.sources.registry import FORMATS

    for name in FORMATS:
        fmt = FORMATS[name]
        assert isinstance(fmt, SourceFormat) and fmt.name == name, name


# A document's address and each table's rowids are computed, moved and decoded in
# ``catalog/rowids.py`` alone: no other module takes its bit layout (these names, these
# attributes of a ``rowids.Table``) or shifts and masks a rowid, an address, a base, a
# slot, a unit or a key, in Python or in SQL. Readers number their own records
# (``sources/``), and shipped migrations are never edited.
ROWIDS = f"{PACKAGE}.catalog.rowids"
ROWID_EXEMPT = (ROWIDS, f"{PACKAGE}.catalog.migrations", f"{PACKAGE}.sources")
ROWID_BITS = {
    "UNIT_BITS",
    "KEY_SUBAGENT",
    "KEY_SLOT_SHIFT",
    "UNITS_PER_SLOT",
    "PART_BITS",
    "PARTS_PER_UNIT",
    "PART_SHIFT",
    "UNIT_SHIFT",
    "SLOT_SHIFT",
    "SUBAGENT_BIT",
    "KIND_BITS",
    "KIND_OF_BITS",
    "UNIT_MASK",
    "SLOT_SPAN",
}
ROWID_ATTRIBUTES = {"low", "kind_bits", "kind_mask", "subagent_bit", "slot_shift"}
ROWID_OPERANDS = re.compile(r"rowid|address|base|slot|unit|key", re.IGNORECASE)
ROWID_SQL = re.compile(r"(rowid|base|slot)\)?\s*(>>|<<|&)", re.IGNORECASE)


def rowid_arithmetic(source: str) -> list[str]:
    """Where a module's code does what only ``rowids`` may (line: what)."""
    tree = ast.parse(source)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
    }
    found = []
    for node in ast.walk(tree):
        what = None
        if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("rowids"):
            taken = sorted({alias.name for alias in node.names} & ROWID_BITS)
            what = f"imports {taken}" if taken else None
        elif isinstance(node, ast.Attribute) and node.attr in ROWID_ATTRIBUTES:
            what = f".{node.attr}"
        elif isinstance(node, ast.BinOp) and isinstance(
            node.op, ast.LShift | ast.RShift | ast.BitAnd
        ):
            operands = [ast.get_source_segment(source, o) or "" for o in (node.left, node.right)]
            if any(ROWID_OPERANDS.search(o) for o in operands):
                what = ast.get_source_segment(source, node)
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
            and ROWID_SQL.search(node.value)
        ):
            what = f"SQL {node.value.strip()[:60]!r}"
        if what is not None:
            found.append(f"{getattr(node, 'lineno', '?')}: {what}")
    return found


def test_only_rowids_computes_moves_or_decodes_a_document_address() -> None:
    found = {
        name: where
        for name, path in modules().items()
        if not name.startswith(ROWID_EXEMPT)
        and (where := rowid_arithmetic(path.read_text(encoding="utf-8")))
    }
    assert not found, f"rowid arithmetic outside catalog/rowids.py (use its functions): {found}"


@pytest.mark.parametrize(
    "source",
    [
        "from convodex.catalog.rowids import SLOT_SHIFT",
        "base = address & mask",
        "slot = DOCUMENTS.slot_shift",
        "sql = f'SELECT rowid >> {n} FROM documents'",
        "sql = f'SELECT 1 FROM messages AS m WHERE (m.base) & {n}'",
    ],
)
def test_the_rowid_check_sees_arithmetic(source: str) -> None:
    assert rowid_arithmetic(source)


@pytest.mark.parametrize(
    "graph, cycles",
    [
        ({"a": frozenset({"b"}), "b": frozenset({"a"})}, [frozenset({"a", "b"})]),
        ({"a": frozenset({"b"}), "b": frozenset({"c"}), "c": frozenset()}, []),
        (
            {"a": frozenset({"b"}), "b": frozenset({"c"}), "c": frozenset({"a", "d"})},
            [frozenset({"a", "b", "c"})],
        ),
    ],
)
def test_the_cycle_finder_finds_cycles(
    graph: dict[str, frozenset[str]], cycles: list[frozenset[str]]
) -> None:
    assert _cycles(graph) == cycles


# An ``IN (…)`` or ``VALUES`` list of bound parameters is built by ``sqlite.marks``
# alone, so every statement spells it the same way.
INLINE_MARKS = re.compile(r"""\.join\(\s*(['"])\?\1""")


def inline_marks(source: str) -> list[int]:
    """The lines of ``source`` that join ``?`` marks themselves."""
    return [n for n, line in enumerate(source.splitlines(), 1) if INLINE_MARKS.search(line)]


def test_bound_parameter_lists_come_from_sqlite_marks() -> None:
    found = {
        name: lines
        for name, path in modules().items()
        if name != f"{PACKAGE}.sqlite" and (lines := inline_marks(path.read_text(encoding="utf-8")))
    }
    assert not found, f"inline '?' lists (use convodex.sqlite.marks): {found}"


@pytest.mark.parametrize(
    "source",
    [
        "sql = f\"IN ({', '.join('?' for _ in ids)})\"",
        'marks = ", ".join("?" for _ in ids)',
        "marks = ','.join('?' * len(ids))",
    ],
)
def test_the_marks_check_sees_an_inline_list(source: str) -> None:
    assert inline_marks(source)


# The façade (``catalog/service.py``) composes the catalog's modules: every statement it
# needs runs in the module that owns that concept.
FACADE = SRC / PACKAGE / "catalog" / "service.py"


def test_the_facade_runs_no_sql_itself() -> None:
    lines = [
        n
        for n, line in enumerate(FACADE.read_text(encoding="utf-8").splitlines(), 1)
        if ".execute(" in line
    ]
    assert not lines, f"catalog/service.py runs SQL (move it to its module): lines {lines}"
