"""What a command run for a client by a service needs to know about that client: the
warm service to use instead of opening the catalog, and the client's directory."""

from __future__ import annotations

import os
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING

from convodex.warm import NotWarm, address

if TYPE_CHECKING:
    from convodex.catalog.service import HistoryService


@dataclass(frozen=True)
class WarmCall:
    service: HistoryService
    catalog: str  # the service's catalog file, as ``address.catalog_file`` spells it
    cwd: str  # the client's working directory

    def check(self, cache_dir: str | os.PathLike[str] | None, roots: object, follow: bool) -> None:
        """Refuse (``NotWarm``) what the service would answer differently from the
        command in-process: another catalog, roots of its own, other link rules."""
        from convodex import config

        if cache_dir is not None:
            cache_dir = os.path.join(self.cwd, os.path.expanduser(cache_dir))
        if address.catalog_file(str(config.cache_root(cache_dir))) != self.catalog:
            raise NotWarm("another catalog")
        if roots or follow != self.service.follow_symlinks or self.service.scope is not None:
            raise NotWarm("roots of its own")


CURRENT: ContextVar[WarmCall | None] = ContextVar("convodex_warm_call", default=None)


def current_dir() -> str:
    """The working directory of the command's user (the client's, when warm)."""
    call = CURRENT.get()
    return os.getcwd() if call is None else call.cwd


def local_only(why: str) -> None:
    """Say that this command needs the client's own process (a pager on its terminal)."""
    if CURRENT.get() is not None:
        raise NotWarm(why)
