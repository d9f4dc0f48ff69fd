"""Install, uninstall and status over agents' config files (SPEC L18).

A run first *plans* every file (the new bytes, or why not), then writes: a file that
does not parse refuses its whole agent with one line and is never touched. Writing is
atomic, keeps a backup of the original once, and records what was added in the
manifest (``files``). A second install computes the same bytes and writes nothing.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

import msgspec

from convodex.agents import files, jsonc
from convodex.agents.jsonc import EditError
from convodex.agents.spec import Agent, Entry, Scope, Target

Action = Literal["create", "change", "unchanged", "restore", "remove", "delete"]


class FileChange(msgspec.Struct, kw_only=True):
    """What a run does to one file; ``before``/``after`` are never printed as JSON."""

    agent: str
    path: str
    purposes: list[str]
    action: Action
    entries: list[str] = msgspec.field(default_factory=list)
    backup: str | None = None
    before: bytes | None = msgspec.field(default=None)
    after: bytes | None = msgspec.field(default=None)
    leaves: list[list[str]] = msgspec.field(default_factory=list)
    containers: list[list[str]] = msgspec.field(default_factory=list)

    def public(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "agent": self.agent,
            "path": self.path,
            "purposes": self.purposes,
            "action": self.action,
            "entries": self.entries,
        }
        if self.backup:
            out["backup"] = self.backup
        return out

    def diff(self) -> str:
        old = (self.before or b"").decode("utf-8", "replace").splitlines(keepends=True)
        new = (self.after or b"").decode("utf-8", "replace").splitlines(keepends=True)
        label = self.path
        lines = difflib.unified_diff(old, new, f"{label} (now)", f"{label} (after)")
        return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def by_file(targets: Iterable[Target]) -> dict[Path, list[Target]]:
    grouped: dict[Path, list[Target]] = {}
    for target in targets:
        grouped.setdefault(target.path, []).append(target)
    return grouped


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except IsADirectoryError as exc:
        raise EditError(f"{path} is a directory; left untouched") from exc
    except OSError as exc:
        raise EditError(f"{path} cannot be read ({exc.strerror}); left untouched") from exc


def _decode(path: Path, raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise EditError(f"{path} is not UTF-8 text; left untouched") from exc


# -- install ----------------------------------------------------------------------------


def plan_install(agent: str, path: Path, targets: list[Target]) -> FileChange:
    """The change install makes to one file (EditError when it must not be edited)."""
    before = _read(path)
    fmt = targets[0].format
    entries = [entry for target in targets for entry in target.entries]
    text = "" if before is None else _decode(path, before)
    try:
        if fmt == "toml":
            after, leaves, containers = _install_toml(text, entries)
        else:
            lf, crlf = _lf(text or "{}\n")
            after, leaves, containers = _install_json(lf, entries, fmt == "jsonc")
            after = after.replace("\n", "\r\n") if crlf else after
    except EditError as exc:
        kind = "TOML" if fmt == "toml" else "JSON" if fmt == "json" else "JSON (with comments)"
        raise EditError(
            f"{path} is not the {kind} convodex expects ({exc}); left untouched"
        ) from exc
    data = after.encode("utf-8")
    if before is not None and data == before:
        action: Action = "unchanged"
    else:
        action = "create" if before is None else "change"
    return FileChange(
        agent=agent,
        path=str(path),
        purposes=sorted({str(t.purpose) for t in targets}),
        action=action,
        entries=[e.label() for e in entries] if action != "unchanged" else [],
        before=before,
        after=data,
        leaves=leaves,
        containers=containers,
    )


def _lf(text: str) -> tuple[str, bool]:
    """``text`` with Windows line ends made plain for editing, and whether it had them
    (every one: a file of mixed line ends is edited as it is)."""
    crlf = "\r\n" in text and text.count("\n") == text.count("\r\n")
    return (text.replace("\r\n", "\n"), True) if crlf else (text, False)


def _leaf(entry: Entry) -> list[str]:
    return [*entry.path, f"#{entry.marker}"] if entry.marker else list(entry.path)


def _install_json(
    text: str, entries: list[Entry], comments: bool
) -> tuple[str, list[list[str]], list[list[str]]]:
    leaves: list[list[str]] = []
    containers: list[list[str]] = []
    for entry in entries:
        root = jsonc.parse(text, comments)
        unit = jsonc.indent_unit(text, root)
        *outer, name = entry.path
        leaf: Any = [entry.value] if entry.marker else entry.value
        node = root
        for depth, key in enumerate(outer):
            child = node.member(key)
            if child is None:
                nested: Any = {name: leaf}
                for wrap in reversed(outer[depth + 1 :]):
                    nested = {wrap: nested}
                text = jsonc.insert_member(text, node, key, nested, unit)
                # Every level made here is convodex's, down to the hook's own array.
                containers.extend(outer[: level + 1] for level in range(depth, len(outer)))
                if entry.marker:
                    containers.append(list(entry.path))
                leaves.append(_leaf(entry))
                break
            if child.kind != "object":
                raise EditError(f"{'.'.join(outer[: depth + 1])} is not an object")
            node = child
        else:
            text, added = _set_json(text, node, entry, unit)
            if added is not None:
                leaves.append(_leaf(entry))
                if added:
                    containers.append(list(entry.path))
    return text, leaves, containers


def _set_json(text: str, node: jsonc.Node, entry: Entry, unit: str) -> tuple[str, bool | None]:
    """Put one entry in object ``node``: (text, None) when it is already there as it
    should be, else (text, whether a new array was made for it)."""
    name = entry.path[-1]
    existing = node.member(name)
    if entry.marker is None:
        if existing is None:
            return jsonc.insert_member(text, node, name, entry.value, unit), False
        if jsonc.load_node(text, existing) == entry.value:
            return text, None
        return jsonc.replace_value(text, existing, entry.value, unit), False
    if existing is None:
        return jsonc.insert_member(text, node, name, [entry.value], unit), True
    if existing.kind != "array":
        raise EditError(f"{'.'.join(entry.path)} is not an array")
    for item in existing.children:
        if entry.marker in text[item.start : item.end]:
            if jsonc.load_node(text, item) == entry.value:
                return text, None
            return jsonc.replace_value(text, item, entry.value, unit), False
    return jsonc.append_item(text, existing, entry.value, unit), False


def _install_toml(text: str, entries: list[Entry]) -> tuple[str, list[list[str]], list[list[str]]]:
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    try:
        doc = tomlkit.parse(text)
    except TOMLKitError as exc:
        raise EditError(str(exc).split("\n")[0]) from exc
    leaves: list[list[str]] = []
    containers: list[list[str]] = []
    for entry in entries:
        *outer, name = entry.path
        table: Any = doc
        for depth, key in enumerate(outer):
            if key not in table:
                table[key] = tomlkit.table(is_super_table=True)
                containers.append(outer[: depth + 1])
            table = table[key]
            if not isinstance(table, dict):
                raise EditError(f"{'.'.join(outer[: depth + 1])} is not a table")
        current = table.get(name)
        plain = current.unwrap() if hasattr(current, "unwrap") else current
        if plain == entry.value:
            continue
        new = tomlkit.table()
        for key, value in entry.value.items():
            new[key] = value
        if name in table:
            del table[name]
        table[name] = new
        leaves.append(list(entry.path))
    return tomlkit.dumps(doc), leaves, containers


def apply_install(change: FileChange) -> FileChange:
    """Write one planned install (nothing for ``unchanged``) and record it."""
    if change.action == "unchanged" or change.after is None:
        return change
    path = Path(change.path)
    _unchanged_since_planned(path, change)
    records = files.read_manifest()
    record = records.get(change.path)
    if record is None:
        backup = None
        if change.before is not None:
            backup = str(files.keep_backup(path, change.before))
        record = files.FileRecord(agent=change.agent, created=change.before is None, backup=backup)
    files.atomic_write(path, change.after)
    record.written_sha256 = files.sha256(change.after)
    record.leaves = _merge(record.leaves, change.leaves)
    record.containers = _merge(record.containers, change.containers)
    records[change.path] = record
    files.write_manifest(records)
    change.backup = record.backup
    return change


def _unchanged_since_planned(path: Path, change: FileChange) -> None:
    """An agent may rewrite its own file while we work (Claude Code rewrites
    ``~/.claude.json`` often): never replace bytes we did not plan from."""
    if _read(path) != change.before:
        raise EditError(f"{path} changed while convodex was editing it; left as it is, run again")


def _merge(old: list[list[str]], new: list[list[str]]) -> list[list[str]]:
    return old + [item for item in new if item not in old]


# -- uninstall --------------------------------------------------------------------------


def plan_uninstall(agent: str, path: Path, targets: list[Target]) -> FileChange:
    """What uninstall does to one file: restore the original bytes when nothing else
    changed it since install, else take out exactly convodex's entries."""
    purposes: list[str] = sorted({str(t.purpose) for t in targets})
    record = files.read_manifest().get(str(path))
    before = _read(path)
    base = FileChange(agent=agent, path=str(path), purposes=purposes, action="unchanged")
    if record is None or before is None:
        return base
    base.before = before
    base.entries = [".".join(p for p in leaf if not p.startswith("#")) for leaf in record.leaves]
    if files.sha256(before) == record.written_sha256:
        if record.created:
            base.action, base.after = "delete", b""
            return base
        original = Path(record.backup).read_bytes() if record.backup else None
        if original is not None:
            base.action, base.after, base.backup = "restore", original, record.backup
            return base
    text = _decode(path, before)
    fmt = targets[0].format
    if fmt == "toml":
        after = _remove_toml(path, text, record)
    else:
        lf, crlf = _lf(text)
        after = _remove_json(path, lf, record, fmt == "jsonc")
        after = after.replace("\n", "\r\n") if crlf else after
    base.after = after.encode("utf-8")
    base.action = "unchanged" if base.after == before else "remove"
    return base


def _remove_json(path: Path, text: str, record: files.FileRecord, comments: bool) -> str:
    try:
        for leaf in record.leaves:
            marker = leaf[-1][1:] if leaf[-1].startswith("#") else None
            keys = leaf[:-1] if marker else leaf
            text = _drop(text, keys, marker, comments)
        for container in sorted(record.containers, key=len, reverse=True):
            root = jsonc.parse(text, comments)
            node = jsonc.find(root, container)
            if node is not None and not node.children:
                text = _drop(text, container, None, comments)
    except EditError as exc:
        raise EditError(f"{path} no longer parses ({exc}); left untouched") from exc
    return text


def _drop(text: str, keys: list[str], marker: str | None, comments: bool) -> str:
    root = jsonc.parse(text, comments)
    parent = jsonc.find(root, keys[:-1])
    if parent is None or parent.kind != "object" or keys[-1] not in parent.keys:
        return text
    index = parent.keys.index(keys[-1])
    if marker is None:
        return jsonc.remove_child(text, parent, index)
    array = parent.children[index]
    for n in reversed(range(len(array.children))):
        item = array.children[n]
        if array.kind == "array" and marker in text[item.start : item.end]:
            text = jsonc.remove_child(text, array, n)
            array = jsonc.find(jsonc.parse(text, comments), keys) or array
    return text


def _remove_toml(path: Path, text: str, record: files.FileRecord) -> str:
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    try:
        doc = tomlkit.parse(text)
    except TOMLKitError as exc:
        raise EditError(f"{path} no longer parses; left untouched") from exc
    for keys in [*record.leaves, *sorted(record.containers, key=len, reverse=True)]:
        table: Any = doc
        for key in keys[:-1]:
            table = table.get(key) if isinstance(table, dict) else None
        if not isinstance(table, dict) or keys[-1] not in table:
            continue
        value = table[keys[-1]]
        if keys in record.containers and isinstance(value, dict) and value:
            continue  # a table convodex made that now holds the user's own entries
        del table[keys[-1]]
    return tomlkit.dumps(doc)


def apply_uninstall(change: FileChange) -> FileChange:
    path = Path(change.path)
    if change.action == "unchanged":
        return change
    _unchanged_since_planned(path, change)
    if change.action == "delete":
        os.unlink(path)
    elif change.after is not None:
        files.atomic_write(path, change.after)
    records = files.read_manifest()
    records.pop(change.path, None)
    files.write_manifest(records)
    return change


# -- status -----------------------------------------------------------------------------


class AgentStatus(msgspec.Struct, kw_only=True, rename="camel"):
    """``convodex doctor agents``: one agent, one scope."""

    agent: str
    label: str
    installed: bool
    mcp: bool
    hook: bool | None  # None: the agent has no hook convodex can use
    why: list[str] = msgspec.field(default_factory=list)


def status(agent: Agent, scope: Scope, command: list[str]) -> AgentStatus:
    result = AgentStatus(
        agent=agent.name,
        label=agent.label,
        installed=agent.present(scope),
        mcp=False,
        hook=None if agent.no_hook else False,
    )
    if not result.installed:
        result.why.append("not installed (its configuration folder is missing)")
    if agent.no_hook:
        result.why.append(f"no recall hook: {agent.no_hook}")
    for target in agent.targets(scope, command):
        wired = _wired(target)
        if target.purpose == "mcp":
            result.mcp = wired is True
        elif result.hook is not None:
            result.hook = wired is True
        if wired is not True:
            what = "MCP server" if target.purpose == "mcp" else "recall hook"
            reason = wired if isinstance(wired, str) else "not wired (convodex install)"
            result.why.append(f"{what}: {reason}")
    return result


def _wired(target: Target) -> bool | str:
    """True when every entry of ``target`` is in its file; else why not."""
    try:
        raw = _read(target.path)
    except EditError as exc:
        return str(exc)
    if raw is None:
        return f"{_home(target.path)} does not exist"
    try:
        if target.format == "toml":
            import tomllib

            data: Any = tomllib.loads(raw.decode("utf-8"))
        else:
            data = jsonc.load(raw.decode("utf-8"), target.format == "jsonc")
    except (EditError, ValueError) as exc:
        return f"{_home(target.path)} does not parse ({type(exc).__name__})"
    for entry in target.entries:
        found: Any = data
        for key in entry.path:
            found = found.get(key) if isinstance(found, dict) else None
        if entry.marker is None and found is None:
            return "not wired (convodex install)"
        if entry.marker is not None and not any(
            entry.marker in msgspec.json.encode(item).decode() for item in found or []
        ):
            return "not wired (convodex install)"
    return True


def _home(path: Path) -> str:
    home = str(Path.home())
    text = str(path)
    return "~" + text[len(home) :] if text.startswith(home + os.sep) else text
