"""Where histories are: the roots convodex scans and the format a root implies.

Apart from detection (``discover``), which needs every reader: a search, a listing
or a picker asks only for the default roots and the ``--root PATH:format`` overrides,
and must not import a reader per agent to learn them (start-up time is felt on every
command). Format names here are the registry's (``registry.MODULES``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path, PosixPath, WindowsPath

from convodex import config
from convodex.errors import ConfigError, SourceError
from convodex.sources.registry import FORMATS

# VS Code and the forks whose user directory may hold the Cline family's task folders.
VSCODE_APPS = ("Code", "Code - Insiders", "VSCodium")
EXTENSION_HOSTS = (*VSCODE_APPS, "Cursor", "Windsurf")
# The Cline family's VS Code extensions, by format name: each keeps its tasks in
# ``<globalStorage>/<extension id>``.
CLINE_EXTENSIONS = {
    "cline": "saoudrizwan.claude-dev",
    "roo_code": "rooveterinaryinc.roo-cline",
    "kilo_code": "kilocode.kilo-code",
}

if sys.platform == "win32":
    _PlatformPath = WindowsPath
else:
    _PlatformPath = PosixPath


class Root(_PlatformPath):
    """A root: its resolved path, and what was declared for it when it was resolved.

    ``format``: the format every file under it has (``--root PATH:format``, an
    agent's own root), ``None`` to detect per file; ``shallow``: scanned without
    descending (a workspace directory holding an Aider history). Resolved once
    (``resolve_root``) and carried as a value: discovery keeps no table of roots,
    and the catalog stores the declared format with the root (a helper process, a
    hint or a reindex that names the root by path alone finds it there). A path
    derived from a root (``root / name``, ``root.parent``) is a plain ``Root`` with
    nothing declared.
    """

    format: str | None = None
    shallow: bool = False


def declared(path: str | os.PathLike[str], fmt: str | None, shallow: bool = False) -> Root:
    """A root value with its declared format (see ``Root``)."""
    root = Root(path)
    root.format, root.shallow = fmt, shallow
    return root


def as_root(path: Path) -> Root:
    """``path`` as a root value: a ``Root`` as it is, a plain path with nothing declared."""
    return path if isinstance(path, Root) else Root(path)


def vscode_user_dir(app: str, platform: str | None = None) -> Path:
    """A VS Code-family editor's ``User`` directory (``app``: ``Cursor``, ``Code`` …)."""
    platform = platform or sys.platform
    home = Path.home()
    if platform == "darwin":
        return home / "Library" / "Application Support" / app / "User"
    if platform == "win32":
        return Path(os.environ.get("APPDATA") or home / "AppData" / "Roaming") / app / "User"
    return Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config") / app / "User"


def agent_roots() -> list[tuple[Path, str]]:
    """Where other agents keep history: home-relative on every OS (OpenCode follows XDG
    on every OS, macOS included); VS Code-family editors' per OS."""
    home = Path.home()
    claude = Path(os.environ.get("CLAUDE_CONFIG_DIR") or home / ".claude")
    codex_home = Path(os.environ.get("CODEX_HOME") or home / ".codex")
    pi_dir = Path(os.environ.get("PI_CODING_AGENT_DIR") or home / ".pi" / "agent")
    xdg_data = Path(os.environ.get("XDG_DATA_HOME") or home / ".local" / "share")
    appdata = Path(os.environ.get("APPDATA") or home / "AppData" / "Roaming")
    goose_home = os.environ.get("GOOSE_PATH_ROOT")
    goose_dir = (
        xdg_data / "goose" if sys.platform != "win32" else appdata / "Block" / "goose" / "data"
    )
    goose_dir = Path(goose_home) / "data" if goose_home else goose_dir
    zed_dir = {
        "darwin": home / "Library" / "Application Support" / "Zed",
        "win32": Path(os.environ.get("LOCALAPPDATA") or home / "AppData" / "Local") / "Zed",
    }.get(sys.platform, xdg_data / "zed")
    roots = [
        (claude / "projects", "claude_code"),
        (codex_home / "sessions", "codex"),
        (codex_home / "archived_sessions", "codex"),
        (home / ".gemini" / "tmp", "gemini"),
        (xdg_data / "opencode", "opencode"),
        (home / ".cursor" / "projects", "cursor"),
        (home / ".cursor" / "chats", "cursor"),
        (vscode_user_dir("Cursor") / "globalStorage", "cursor_ide"),
    ]
    # Qwen Code 0.14+ honours $QWEN_HOME; older releases wrote ~/.qwen (and before
    # that the Gemini-CLI-style ~/.qwen/tmp/<project hash>/chats).
    qwen_homes = [Path(os.environ.get("QWEN_HOME") or home / ".qwen"), home / ".qwen"]
    for qwen_home in dict.fromkeys(qwen_homes):
        roots += [(qwen_home / "projects", "qwen"), (qwen_home / "tmp", "qwen")]
    roots += [
        (home / ".copilot" / "session-state", "copilot_cli"),
        (home / ".factory" / "sessions", "droid"),
        (pi_dir / "sessions", "pi"),
        (home / ".cline" / "data", "cline"),  # CLI sessions/ and tasks/
        (home / ".trae" / "cli" / "sessions", "trae"),
        (home / ".trae" / "cli" / "archived_sessions", "trae"),
        (home / ".iflow" / "projects", "iflow"),
        (Path(os.environ.get("VIBE_HOME") or home / ".vibe") / "logs" / "session", "mistral_vibe"),
        (home / ".grok" / "sessions", "grok"),
        (xdg_data / "amp" / "threads", "amp"),
        (Path(os.environ.get("KIMI_CODE_HOME") or home / ".kimi-code") / "sessions", "kimi"),
        (home / ".gemini" / "antigravity-cli" / "brain", "antigravity"),
        (home / ".gemini" / "antigravity" / "brain", "antigravity"),
        (Path(os.environ.get("KIRO_HOME") or home / ".kiro") / "sessions" / "cli", "kiro"),
        (vscode_user_dir("Kiro") / "globalStorage" / "kiro.kiroagent", "kiro_ide"),
        (Path(os.environ.get("HERMES_HOME") or home / ".hermes"), "hermes"),
        (goose_dir / "sessions", "goose"),
        (zed_dir / "threads", "zed"),
    ]
    openclaw = os.environ.get("OPENCLAW_STATE_DIR")
    claws = [Path(openclaw)] if openclaw else []
    claws += [home / ".openclaw", home / ".clawdbot", home / ".moltbot"]
    roots += [(claw / "agents", "openclaw") for claw in dict.fromkeys(claws)]
    for app in EXTENSION_HOSTS:
        user = vscode_user_dir(app)
        if app in VSCODE_APPS:
            roots.append((user / "workspaceStorage", "copilot_vscode"))
            for folder in ("emptyWindowChatSessions", "transferredChatSessions"):
                roots.append((user / "globalStorage" / folder, "copilot_vscode"))
        for name, extension in CLINE_EXTENSIONS.items():
            roots.append((user / "globalStorage" / extension, name))
    return roots


def default_roots() -> list[Path]:
    """convodex's own sessions and chat exports, every supported agent's root, then the
    roots the user configured.

    VS Code-family roots are left out for applications that are not installed (no
    ``User`` folder): five editors times six folders would otherwise list thirty
    missing roots.
    """
    roots = [config.sessions_dir(), config.data_home() / "exports"]
    absent = [user for user in map(vscode_user_dir, EXTENSION_HOSTS) if not user.is_dir()]
    agents = [path for path, _ in agent_roots() if not any(path.is_relative_to(u) for u in absent)]
    return roots + agents + configured_roots()


def configured_roots() -> list[Path]:
    """The ``roots`` list of the config file (``PATH[:format]`` each), resolved.

    ``roots = ["~/src:aider"]`` adds a directory tree whose Aider histories are
    indexed. A missing file is no roots; a malformed one is a clear error.
    """
    roots = config.user_config().get("roots", [])
    if not isinstance(roots, list) or not all(isinstance(r, str) for r in roots):
        raise ConfigError(
            f"{config.config_file()}: roots must be a list of paths (PATH or PATH:format)"
        )
    return [resolve_root(spec, must_exist=False) for spec in roots]


def split_root(spec: str | os.PathLike[str]) -> tuple[str, str | None]:
    """``PATH[:format]``: the format suffix only when it names a known format.

    Hyphens and underscores are interchangeable in format names.
    """
    text = os.fspath(spec)
    head, sep, tail = text.rpartition(":")
    name = tail.replace("-", "_")  # `claude-code` as people write it, `claude_code` too
    if sep and head and name in FORMATS:
        return head, name
    return text, None


def resolve_root(path: str | os.PathLike[str], *, must_exist: bool = True) -> Root:
    """A root value: the path resolved, and the format ``PATH:format`` declares for
    every file under it (else the agent root's it lies in, else none)."""
    spec, fmt = split_root(path)
    root = Path(spec).expanduser()
    root = root.resolve() if root.exists() else Path(os.path.abspath(root))
    if must_exist and not root.is_dir():
        raise SourceError(str(root), "root is not a directory")
    if isinstance(path, Root) and fmt is None:
        return declared(root, path.format, path.shallow)
    return declared(root, fmt or agent_format(root))


def agent_format(root: Path) -> str | None:
    """The format of the agent root ``root`` lies in: the most specific wins (a Cline
    extension's folder lies inside the Cursor editor's globalStorage)."""
    found = [(path, fmt) for path, fmt in agent_roots() if root.is_relative_to(path)]
    return max(found, key=lambda item: len(item[0].parts))[1] if found else None


def root_format(root: Path) -> str | None:
    """The format every file under ``root`` has: the one declared with it, else a
    known agent root's."""
    if isinstance(root, Root) and root.format is not None:
        return root.format
    return agent_format(root)
