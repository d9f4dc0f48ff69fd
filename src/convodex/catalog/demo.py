"""The bundled demo corpus (``convodex/demo``): what ``serve`` and ``demo`` show when
there are no sessions of yours yet, indexed into a catalog of its own.

It stays a demo: answers from it say so on every surface (``progress.demo``, and the
line ``NOTE``); a user catalog an older version recorded it in says so too
(``MIXED_NOTE``) until the next plain ``index`` drops it.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from convodex.models import DemoShare, Progress, ReindexReport

if TYPE_CHECKING:
    from convodex.sources.roots import Root

DEMO_ROOT = Path(__file__).parents[1] / "demo"
NOTE = "demo: these answers come from the bundled demo corpus, not your sessions"
# An older version indexed the demo into the user's own catalog, beside the user's roots:
# until a plain ``index`` drops it, its sessions rank among the user's.
MIXED_NOTE = (
    "demo: this catalog also holds the bundled demo corpus (an older version indexed it"
    " here); `convodex index` drops it"
)


def is_demo(root: Path) -> bool:
    """Whether ``root`` is the bundled demo corpus."""
    return Path(root).resolve() == DEMO_ROOT.resolve()


def share(roots: Iterable[Path]) -> DemoShare | None:
    """What of the answers from these roots is the demo's: all of them (``only``), some
    (``mixed``: an older version indexed it beside the user's roots), or none."""
    given = list(roots)
    demo = sum(1 for root in given if is_demo(root))
    if not demo:
        return None
    return "only" if demo == len(given) else "mixed"


def without_demo(roots: Iterable[Path]) -> list[Path]:
    """``roots`` less the bundled demo corpus (an older catalog may have recorded it)."""
    return [root for root in roots if not is_demo(root)]


def labelled(progress: Progress, part: DemoShare | None) -> Progress:
    """``progress`` of answers the demo has ``part`` in: marked, for every surface to
    say so."""
    return progress if part is None else msgspec.structs.replace(progress, demo=part)


def note(progress: Progress) -> str | None:
    """The line that says the demo is in the answers, if it is."""
    if progress.demo == "only":
        return NOTE
    return MIXED_NOTE if progress.demo == "mixed" else None


def sentence(progress: Progress, said: str) -> str:
    """``said`` (the progress sentence), after the demo's note when the demo is in it."""
    line = note(progress)
    return said if line is None else f"{line}; {said}"


def kept_roots(known: Iterable[Path]) -> list[Root]:
    """What a rebuild of the user's catalog reads: the default roots and the roots it
    knows, never the demo corpus."""
    from convodex.sources.roots import default_roots, resolve_root

    return [resolve_root(p, must_exist=False) for p in without_demo([*default_roots(), *known])]


def drop_recorded(cache_dir: Path | None) -> ReindexReport | None:
    """The user's catalog under ``cache_dir`` rebuilt without the demo corpus when an
    older version recorded it there (its demo sessions would rank with the user's);
    None when it holds none, or when this is the demo's own catalog (``<cache>/demo``)."""
    known = recorded_demo(cache_dir)
    if known is None:
        return None
    from convodex.catalog.maintenance import reindex_history

    return reindex_history(kept_roots(known), cache_dir)


def recorded_demo(cache_dir: Path | None) -> list[Path] | None:
    """The roots the user's catalog under ``cache_dir`` knows when the demo corpus is
    among them (``drop_recorded`` rebuilds it without); None otherwise. Reads the
    catalog only: a no-op ``index`` asks first, without the indexer."""
    from convodex import config
    from convodex.catalog.db import recorded_roots

    if config.cache_root(cache_dir).name == "demo":
        return None
    known = recorded_roots(config.catalog_path(cache_dir))
    return known if any(is_demo(root) for root in known) else None
