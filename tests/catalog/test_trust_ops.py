"""Operations (SPEC L11): ``doctor catalogs``, ``catalogs reindex history``, and privacy.

The doctor is read-only; reindex builds a new file beside the old one and swaps it
in, keeping the old one when the rebuild fails; no diagnostic ever prints content.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from pathlib import Path
from typing import Any

import pytest

from convodex.catalog.db import SCHEMA_VERSION, open_catalog
from convodex.catalog.indexer import Indexer
from convodex.catalog.maintenance import doctor_catalogs, reindex_history
from convodex.config import catalog_path
from convodex.errors import CatalogError
from convodex.sqlite import sqlite3
from helpers import CliRun, as_json, search, tree_hashes, write_session


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def hits(cache_dir: Path, query: str) -> list[tuple[str, int, int, str]]:
    with open_catalog(cache_dir) as catalog:
        result = search(catalog, query, limit=200)
    return [
        (Path(h["sessionPath"]).name, h["messageIndex"], h["partIndex"], h["kind"])
        for h in result["hits"]
    ]


def doctor_json(cli: CliRun) -> dict[str, Any]:
    out = as_json(cli("doctor", "catalogs", "--json"))
    (report,) = out["catalogs"]
    assert report["name"] == "history"
    return report  # type: ignore[no-any-return]


# -- doctor ----------------------------------------------------------------------------


def test_doctor_never_creates_a_missing_catalog(cache_dir: Path, cli: CliRun) -> None:
    report = doctor_json(cli)
    assert report["exists"] is False and report["integrity"] == "missing"
    assert report["mode"] == "disk" and report["sizeBytes"] == 0
    assert not cache_dir.exists()
    text = cli("doctor", "catalogs")
    assert text.exit_code == 0 and "integrity: missing" in text.stdout
    assert not cache_dir.exists()


def test_doctor_reports_health_errors_and_quarantine(
    root: Path, cache_dir: Path, cli: CliRun
) -> None:
    path = catalog_path(cache_dir)
    path.parent.mkdir(parents=True)
    path.write_bytes(os.urandom(8192))  # quarantined by the next open
    write_session(root, "ok1", [{"role": "user", "content": "alpha"}])
    write_session(root, "ok2", [{"role": "user", "content": "alpha"}])
    (root / "huge.jsonl").write_text(json.dumps({"role": "user", "content": "x" * 5000}) + "\n")
    doomed = write_session(root, "doomed", [{"role": "user", "content": "alpha"}])
    with open_catalog(cache_dir) as catalog:
        from convodex.sources.base import Budget

        indexer = Indexer(catalog, budget=Budget(max_record_bytes=4096))
        root_id = indexer.scan_root(root)
        doomed.unlink()
        indexer.index_pending([root_id])
    before = digest(path)
    report = doctor_json(cli)
    assert report["mode"] == "disk" and report["exists"] is True
    assert report["schema"] == SCHEMA_VERSION == report["supportedSchema"]
    assert report["integrity"] == "ok"
    assert report["sources"] == {"ok": 2, "stale": 0, "failed": 1, "missing": 1}
    assert report["errorClasses"] == {"SessionReplayLimitError": 1}
    assert report["sizeBytes"] >= path.stat().st_size > 0
    assert report["revision"] >= 1
    (item,) = report["quarantined"]
    assert Path(item["path"]).name.startswith("v1.sqlite.quarantine-")
    assert item["sizeBytes"] == 8192 and item["quarantinedAt"] > 1_600_000_000_000
    text = cli("doctor", "catalogs").stdout
    assert "sources: 2 ok, 0 stale, 1 failed, 1 missing" in text
    assert "1 × SessionReplayLimitError" in text and "quarantined:" in text
    assert digest(path) == before  # read-only


def test_doctor_reports_damage_without_repairing_it(
    root: Path, cache_dir: Path, cli: CliRun
) -> None:
    for n in range(20):
        write_session(root, f"s{n}", [{"role": "user", "content": f"alpha w{n} " * 40}])
    path = catalog_path(cache_dir)
    with open_catalog(cache_dir) as catalog:
        Indexer(catalog).run([root])
    with open(path, "r+b") as handle:
        handle.seek(8192)
        handle.write(os.urandom(path.stat().st_size - 8192))
    before = digest(path)
    report = doctor_json(cli)
    assert report["integrity"] in ("failed", "unreadable")
    assert report["quarantined"] == []
    assert digest(path) == before


def test_doctor_modes_degraded_and_memory(
    root: Path, cache_dir: Path, tmp_path: Path, cli: CliRun
) -> None:
    write_session(root, "s1", [{"role": "user", "content": "alpha"}])
    with open_catalog(cache_dir) as catalog:
        Indexer(catalog).run([root])
    db = sqlite3.connect(str(catalog_path(cache_dir)))
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    report = doctor_json(cli)
    assert report["mode"] == "degraded" and report["schema"] == SCHEMA_VERSION + 1
    assert report["integrity"] == "ok" and report["sources"]["ok"] == 1
    remote = f"1 0 0:40 / {tmp_path} rw - cifs //nas/x rw\n"
    (memory,) = doctor_catalogs(tmp_path / "elsewhere", mountinfo=remote)
    assert memory.mode == "memory" and memory.note is not None and "cifs" in memory.note
    assert not (tmp_path / "elsewhere").exists()


# -- reindex ---------------------------------------------------------------------------


def corpus(root: Path) -> None:
    for n in range(6):
        write_session(
            root,
            f"s{n}",
            [
                {"role": "user", "content": f"alpha question {n}"},
                {
                    "role": "assistant",
                    "content": "checking",
                    "tool_calls": [{"id": "c", "name": "bash", "arguments": "ls beta"}],
                },
                {"role": "tool", "tool_call_id": "c", "content": f"error: gamma {n}"},
            ],
        )


def test_reindex_builds_beside_and_swaps_in(root: Path, cache_dir: Path, cli: CliRun) -> None:
    corpus(root)
    as_json(cli("index", "--root", str(root), "--json"))
    path = catalog_path(cache_dir)
    old_inode = path.stat().st_ino
    (root / "s0.jsonl").unlink()  # the rebuilt catalog reflects today's files
    hashes = tree_hashes(root)
    out = as_json(cli("catalogs", "reindex", "history", "--dir", str(root), "--json"))
    assert out["replaced"] is True and out["roots"] == [str(root.resolve())]
    assert out["stats"]["indexed"] == 5 and out["progress"]["state"] == "complete"
    assert path.stat().st_ino != old_inode
    assert sorted(p.name for p in path.parent.iterdir()) == ["v1.sqlite"]
    assert tree_hashes(root) == hashes
    fresh = root.parent / "fresh-cache"
    with open_catalog(fresh) as catalog:
        Indexer(catalog).run([root.resolve()])
    for query in ("alpha", "beta", "gamma"):
        assert hits(cache_dir, query) == hits(fresh, query)
    assert len(hits(cache_dir, "alpha")) == 5
    text = cli("catalogs", "reindex", "history", "--dir", str(root))
    assert text.exit_code == 0 and "rebuilt" in text.stdout


def test_reindex_without_dirs_uses_default_and_known_roots(
    root: Path, cache_dir: Path, cli: CliRun
) -> None:
    corpus(root)
    as_json(cli("index", "--root", str(root), "--json"))
    out = as_json(cli("catalogs", "reindex", "history", "--json"))
    assert str(root.resolve()) in out["roots"]
    assert out["stats"]["indexed"] == 6


def test_reindex_ignores_a_stale_wal_of_the_old_catalog(root: Path, cache_dir: Path) -> None:
    corpus(root)
    path = catalog_path(cache_dir)
    with open_catalog(cache_dir) as catalog:
        Indexer(catalog).run([root])
    holder = sqlite3.connect(str(path), isolation_level=None)
    try:
        holder.execute("PRAGMA wal_autocheckpoint = 0")
        holder.execute("INSERT INTO catalog_meta(key, value) VALUES ('old-wal', '1')")
        reindex_history([root], cache_dir)
    finally:
        holder.close()
    with open_catalog(cache_dir) as catalog:
        assert catalog.meta("old-wal") is None
        assert catalog.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert len(hits(cache_dir, "alpha")) == 6


def test_failed_reindex_keeps_the_old_catalog(
    root: Path, cache_dir: Path, cli: CliRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus(root)
    as_json(cli("index", "--root", str(root), "--json"))
    path = catalog_path(cache_dir)
    before = digest(path)
    real_run = Indexer.run

    def failing_run(self: Indexer, roots: Any, progress: Any = None) -> Any:
        real_run(self, roots, progress)  # the new file is fully written...
        raise OSError(28, "No space left on device")  # ...and then the disk fills

    monkeypatch.setattr(Indexer, "run", failing_run)
    out = cli("catalogs", "reindex", "history", "--dir", str(root), "--json")
    assert out.exit_code == 1
    assert "the old catalog was kept" in out.stderr and "OSError" in out.stderr
    assert digest(path) == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["v1.sqlite"]
    assert len(hits(cache_dir, "alpha")) == 6


def test_reindex_usage_and_refusals(root: Path, tmp_path: Path, cli: CliRun) -> None:
    out = cli("catalogs", "reindex", "history", "--dir", str(tmp_path / "nope"))
    assert out.exit_code == 2
    out = cli("catalogs", "reindex", "history", "--bogus")
    assert out.exit_code == 2
    remote = f"1 0 0:40 / {tmp_path} rw - nfs server:/x rw\n"
    with pytest.raises(CatalogError, match="remote filesystem"):
        reindex_history([root], tmp_path / "c", mountinfo=remote)


# -- privacy ---------------------------------------------------------------------------


def test_no_diagnostic_prints_content(
    root: Path, cache_dir: Path, cli: CliRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    markers = [f"zq{secrets.token_hex(6)}" for _ in range(12)]
    m = iter(markers)
    write_session(
        root,
        "private",
        [
            {"role": "system", "content": f"system {next(m)}"},
            {"role": "user", "content": f"please {next(m)} 数据{next(m)}"},
            {
                "role": "assistant",
                "content": f"sure {next(m)}",
                "tool_calls": [
                    {"id": "c1", "name": f"tool{next(m)}", "arguments": f'{{"q": "{next(m)}"}}'}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": f"error: {next(m)}"},
        ],
        {"name": f"title {next(m)}", "workspace_root": "/work"},
    )
    # Lines that fail, and a source over a budget, still never leak their text.
    with open(root / "private.jsonl", "a", encoding="utf-8") as handle:
        handle.write('{"role": "user", "content": "' + next(m) + '"')  # truncated, complete later
        handle.write("\n{not json " + next(m) + "}\n")
    (root / "over.jsonl").write_text(
        json.dumps({"role": "user", "content": next(m) + " " + "p" * 6000}) + "\n"
    )
    (root / "binary.jsonl").write_bytes(os.urandom(2048) + next(m).encode() + b"\n")
    monkeypatch.setenv("CONVODEX_REPLAY_MAX_RECORD_BYTES", "4096")
    outputs = []

    def run(*args: str, expect: int = 0) -> None:
        result = cli(*args)
        assert result.exit_code == expect, (args, result.output)
        outputs.append(result.stdout + result.stderr)

    run("index", "--root", str(root), "--json")
    run("index", "--root", str(root))
    run("doctor", "catalogs")
    run("doctor", "catalogs", "--json")
    run("catalogs", "reindex", "history", "--dir", str(root), "--json")
    run("catalogs", "reindex", "history", "--dir", str(root))
    run("search", markers[1], "--json")  # a real search finds it (its output may show it)...
    outputs.pop()  # ...but search output is not a diagnostic
    run("search", "%%%", expect=1)  # a bad query's error names no content
    path = catalog_path(cache_dir)
    db = sqlite3.connect(str(path))
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    run("index", "--root", str(root), expect=1)
    run("catalogs", "reindex", "history", "--dir", str(root), "--json", expect=1)
    run("doctor", "catalogs", "--json")
    path.write_bytes(os.urandom(4096))
    run("doctor", "catalogs", "--json")
    run("index", "--root", str(root), "--json")  # quarantines, rebuilds
    run("doctor", "catalogs")
    blob = "\n".join(outputs)
    assert "SessionReplayLimitError" in blob and "quarantine" in blob  # the runs did happen
    for marker in markers:
        assert marker not in blob


def test_reindex_replaces_a_catalog_that_is_not_a_database(
    root: Path, cache_dir: Path, cli: CliRun
) -> None:
    corpus(root)
    path = catalog_path(cache_dir)
    path.parent.mkdir(parents=True)
    path.write_bytes(os.urandom(10_000))
    Path(f"{path}-wal").write_bytes(os.urandom(5000))  # must not be replayed onto the new file
    out = as_json(cli("catalogs", "reindex", "history", "--dir", str(root), "--json"))
    assert out["stats"]["indexed"] == 6
    assert sorted(p.name for p in path.parent.iterdir()) == ["v1.sqlite"]
    assert doctor_json(cli)["integrity"] == "ok"
    assert len(hits(cache_dir, "alpha")) == 6
