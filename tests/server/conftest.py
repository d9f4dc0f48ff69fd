"""Fixtures: every server test runs against a SQLite file and a real PostgreSQL
(defined in tests/server_fixtures.py, shared with tests/adversarial)."""

from __future__ import annotations

import pytest

from convodex.server import search as search_module
from server.hub_machines import team
from server_fixtures import db, people, pg_cluster

__all__ = ["db", "people", "pg_cluster", "team", "tuning"]


@pytest.fixture(params=["scan-first", "index-first"])
def tuning(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run every case both with the default plan (small data: scan) and with a tiny
    probe window, no second walk and no small-scope scan, so the trigram index serves
    older rows."""
    if request.param == "index-first":
        monkeypatch.setattr(search_module, "PROBE_WINDOW", 2)
        monkeypatch.setattr(search_module, "WALK_LIMIT", 0)
        monkeypatch.setattr(search_module, "SMALL_SCOPE", 0)
    return str(request.param)
