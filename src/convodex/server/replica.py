"""Reads from a streaming replica, with read-your-own-writes (SPEC S6).

Searches and session reads go to the replica (``--replica-db``), which takes them off
the primary. A replica replays the primary's WAL a little behind it, so a caller who
wrote through this server is sent to the replica only once the replica has replayed
past that caller's last write, and to the primary until then. The position kept is
the primary's WAL *insert* position read after the write committed: it covers the
commit record even before it is flushed (``synchronous_commit = off``). Nobody else
waits: a caller who wrote nothing reads the replica as it is. An unreachable replica
serves nothing; the primary answers. Writes made through another server process are
not known here: each process guarantees its own callers' writes.
"""

from __future__ import annotations

import threading

from convodex.errors import ConfigError
from convodex.server.accounts import Caller
from convodex.server.db import Database, DatabaseUnavailable


class ReadRouter:
    def __init__(self, primary: Database, replica: Database | None = None) -> None:
        if replica is not None and (
            primary.dialect.name != "postgresql" or replica.dialect.name != "postgresql"
        ):
            raise ConfigError("a read replica needs PostgreSQL for both databases")
        self.primary = primary
        self.replica = replica
        self._lock = threading.Lock()
        #: account id -> the primary's WAL position after that account's last write
        self._written: dict[str, str] = {}

    def wrote(self, caller: Caller) -> None:
        """Remember where the primary's WAL stands after ``caller``'s committed write."""
        if self.replica is None:
            return
        with self.primary.snapshot() as tx:
            row = tx.one("SELECT CAST(pg_current_wal_insert_lsn() AS text)")
        if row is not None:
            with self._lock:
                self._written[caller.id] = str(row[0])

    def reader(self, caller: Caller) -> Database:
        """The database ``caller``'s next read goes to."""
        if self.replica is None:
            return self.primary
        with self._lock:
            position = self._written.get(caller.id)
        if position is None:
            return self.replica
        try:
            with self.replica.snapshot() as tx:
                row = tx.one(
                    "SELECT COALESCE(pg_last_wal_replay_lsn() >= CAST(? AS pg_lsn), FALSE)",
                    (position,),
                )
        except DatabaseUnavailable:
            return self.primary
        if row is None or not row[0]:
            return self.primary
        with self._lock:
            if self._written.get(caller.id) == position:
                del self._written[caller.id]
        return self.replica
