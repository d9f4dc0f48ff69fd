"""The bundled demo stays a demo (issue 24 item 3): its own catalog, never the user's,
and a user catalog that recorded the demo root (older versions did) drops it on reindex."""

from __future__ import annotations

from pathlib import Path

from convodex import config
from convodex.catalog.maintenance import recorded_roots
from convodex.cli.options import DEMO_ROOT
from helpers import CliRun, as_json, write_session

SESSION = [
    {"type": "user", "message": {"role": "user", "content": "rotate the signing keys"}},
]


def test_demo_indexes_into_its_own_catalog(cache_dir: Path, cli: CliRun) -> None:
    out = cli("demo")
    assert out.exit_code == 0, out.output
    assert "bundled demo corpus" in out.stdout
    assert not config.catalog_path(cache_dir).exists()
    assert recorded_roots(config.catalog_path(cache_dir / "demo")) == [DEMO_ROOT.resolve()]


def test_reindex_drops_a_recorded_demo_root(tmp_path: Path, cache_dir: Path, cli: CliRun) -> None:
    mine = tmp_path / "mine"
    write_session(mine, "mine", SESSION)
    assert cli("index", "--root", str(DEMO_ROOT), "--root", str(mine)).exit_code == 0
    out = as_json(cli("catalogs", "reindex", "history", "--json"))
    assert str(DEMO_ROOT.resolve()) not in out["roots"] and str(mine.resolve()) in out["roots"]
    assert DEMO_ROOT.resolve() not in recorded_roots(config.catalog_path(cache_dir))
    hits = as_json(cli("search", "rotate", "--json"))
    assert hits["hits"] and all("demo" not in str(h.get("path", "")) for h in hits["hits"])
