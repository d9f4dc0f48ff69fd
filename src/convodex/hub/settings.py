"""Where the hub is and what goes there: flags, else the config file's ``[hub]``
table, else ``CONVODEX_HUB_URL`` / ``CONVODEX_HUB_TOKEN``.

```toml
[hub]
url = "https://hub.example.com"
token = "cdx_…"
team = "platform"           # share what is synced with this team
machine = "laptop"          # default: the host name
include = ["~/work"]        # project paths or roots; default: everything
exclude = ["~/work/secret"]
redact = true               # mask likely secrets before upload (default)
sync_every = 300            # convodex serve syncs every 300 s (default: it does not)
```
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field
from pathlib import Path

from convodex import config
from convodex.errors import ConfigError


@dataclass(frozen=True)
class HubSettings:
    url: str
    token: str
    machine: str
    team: str | None = None
    include: tuple[Path, ...] = ()
    exclude: tuple[Path, ...] = field(default_factory=tuple)
    redact: bool = True
    #: seconds between the syncs ``convodex serve`` runs (``None``: it runs none)
    sync_every: float | None = None

    def shares(self, *paths: str | None) -> bool:
        """Whether a session with these paths (project, transcript) is shared: under an
        ``include`` (or there is none) and under no ``exclude``."""
        found = [Path(p).expanduser() for p in paths if p]

        def under(roots: tuple[Path, ...]) -> bool:
            return any(p == r or r in p.parents for p in found for r in roots)

        return (not self.include or under(self.include)) and not under(self.exclude)


def _table() -> dict[str, object]:
    table = config.user_config().get("hub", {})
    assert isinstance(table, dict)
    known = {"url", "token", "team", "machine", "include", "exclude", "redact", "sync_every"}
    for key in table:
        if key not in known:
            raise ConfigError(f"{config.config_file()}: unknown [hub] setting {key!r}")
    return table


def _string(table: dict[str, object], key: str) -> str | None:
    value = table.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{config.config_file()}: [hub] {key} must be a non-empty string")
    return value.strip()


def _paths(table: dict[str, object], key: str) -> tuple[Path, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{config.config_file()}: [hub] {key} must be a list of paths")
    return tuple(Path(v).expanduser().resolve() for v in value)


def hub_settings(url: str | None = None, token: str | None = None) -> HubSettings:
    """The settings for this run; a missing URL or token is one clear error."""
    table = _table()
    url = url or _string(table, "url") or os.environ.get("CONVODEX_HUB_URL") or None
    token = token or _string(table, "token") or os.environ.get("CONVODEX_HUB_TOKEN") or None
    if not url:
        raise ConfigError("no hub: pass --hub URL, set [hub] url, or CONVODEX_HUB_URL")
    if not url.startswith(("http://", "https://")):
        raise ConfigError("the hub URL must start with http:// or https://")
    if not token:
        raise ConfigError("no hub token: pass --token, set [hub] token, or CONVODEX_HUB_TOKEN")
    redact = table.get("redact", True)
    if not isinstance(redact, bool):
        raise ConfigError(f"{config.config_file()}: [hub] redact must be true or false")
    every = table.get("sync_every")
    if every is not None and (
        isinstance(every, bool) or not isinstance(every, int | float) or not every >= 1
    ):
        raise ConfigError(f"{config.config_file()}: [hub] sync_every must be seconds (1 or more)")
    return HubSettings(
        url=url.rstrip("/"),
        token=token,
        machine=_string(table, "machine") or socket.gethostname() or "machine",
        team=_string(table, "team"),
        include=_paths(table, "include"),
        exclude=_paths(table, "exclude"),
        redact=redact,
        sync_every=None if every is None else float(every),
    )


def serve_sync() -> HubSettings | None:
    """What ``convodex serve`` syncs to in the background: the hub settings when
    ``[hub] sync_every`` is set (then a missing URL or token is one clear error),
    else ``None``."""
    if _table().get("sync_every") is None:
        return None
    return hub_settings()


def configured_hub() -> HubSettings | None:
    """The hub the page and MCP ask beside the local search: the settings when a hub
    URL is configured (then a missing token is one clear error), else ``None``."""
    if not (_string(_table(), "url") or os.environ.get("CONVODEX_HUB_URL")):
        return None
    return hub_settings()
