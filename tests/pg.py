"""A throwaway PostgreSQL cluster for tests and benchmarks.

Starts the installed server binaries into a temporary directory, listening only on
a Unix socket inside it, and removes everything on :meth:`TempPostgres.stop`.
PostgreSQL refuses to run as root, so under root the cluster runs as the
``postgres`` system user (or ``nobody``).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

import psycopg

from convodex.errors import CatalogError

SUPERUSER = "convodex"


def find_bindir() -> Path:
    """The directory holding ``initdb`` and ``postgres`` (newest installed version)."""
    env = os.environ.get("CONVODEX_PG_BINDIR")
    candidates = [env] if env else []
    pg_config = shutil.which("pg_config")
    if pg_config:
        out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=False)
        candidates.append(out.stdout.strip())
    candidates += sorted(
        glob.glob("/usr/lib/postgresql/*/bin"),
        key=lambda p: int(Path(p).parent.name) if Path(p).parent.name.isdigit() else 0,
        reverse=True,
    )
    initdb = shutil.which("initdb")
    if initdb:
        candidates.append(str(Path(initdb).parent))
    for candidate in candidates:
        if candidate and (Path(candidate) / "initdb").is_file():
            return Path(candidate)
    raise CatalogError(
        "PostgreSQL server binaries (initdb, postgres) are not installed; install them with"
        " `apt-get install postgresql` (Debian, Ubuntu), `dnf install postgresql-server`"
        " (Fedora) or `brew install postgresql` (macOS), or set CONVODEX_PG_BINDIR"
    )


def _run_as() -> str | None:
    """The unprivileged user to run the server as, or ``None`` when not root."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
        except KeyError:
            continue
        return name
    raise CatalogError("running as root and no unprivileged user exists for PostgreSQL")


class TempPostgres:
    """One temporary cluster; ``url(dbname)`` gives a psycopg connection string."""

    def __init__(self, *, durable: bool = False, settings: dict[str, str] | None = None) -> None:
        self.bindir = find_bindir()
        self.user = _run_as()
        # Under root the server runs as another user, who must be able to reach the
        # directory: /tmp is world-traversable where $TMPDIR may not be.
        self.root = Path(tempfile.mkdtemp(prefix="cdxpg-", dir="/tmp" if self.user else None))
        self.data = self.root / "data"
        self.port = 5432
        self.durable = durable
        self.settings = dict(settings or {})
        self._process: subprocess.Popen[bytes] | None = None

    def _chown(self, path: Path) -> None:
        if self.user is not None:
            entry = pwd.getpwnam(self.user)
            os.chown(path, entry.pw_uid, entry.pw_gid)

    def start(self) -> TempPostgres:
        self._chown(self.root)
        os.chmod(self.root, 0o700)
        self._create_data()
        self._launch()
        return self

    def _create_data(self) -> None:
        log = self.root / "initdb.log"
        with open(log, "wb") as out:
            done = subprocess.run(
                [
                    str(self.bindir / "initdb"),
                    "-D",
                    str(self.data),
                    "-U",
                    SUPERUSER,
                    "--auth=trust",
                    "--encoding=UTF8",
                    # A UTF-8 ctype makes ILIKE and pg_trgm fold non-ASCII case.
                    "--locale=C.UTF-8",
                    "--no-sync",
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                user=self.user,
                check=False,
            )
        if done.returncode != 0:
            raise CatalogError(f"initdb failed; see {log}")

    def _launch(self) -> None:
        options = {
            "listen_addresses": "",
            "unix_socket_directories": str(self.root),
            "port": str(self.port),
            "max_connections": "100",
            "shared_buffers": "256MB",
        }
        if not self.durable:
            options.update({"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"})
        options.update(self.settings)
        args = [str(self.bindir / "postgres"), "-D", str(self.data)]
        for key, value in options.items():
            args += ["-c", f"{key}={value}"]
        server_log = open(self.root / "server.log", "wb")
        try:
            self._process = subprocess.Popen(
                args, stdout=server_log, stderr=subprocess.STDOUT, user=self.user
            )
        finally:
            server_log.close()
        self._wait_ready()

    def start_replica(self) -> TempReplica:
        """A streaming replica of this cluster (hot standby), started; stop it first."""
        replica = TempReplica(self)
        replica.start()
        return replica

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@/{dbname}?host={self.root}&port={self.port}"

    def _wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if self._process is not None and self._process.poll() is not None:
                raise CatalogError(f"postgres exited at start; see {self.root / 'server.log'}")
            try:
                with psycopg.connect(self.url(), connect_timeout=2) as conn:
                    conn.execute("SELECT 1")
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise CatalogError("postgres did not become ready in time") from None
                time.sleep(0.05)

    def create_database(self, name: str, template: str | None = None) -> str:
        """Create database ``name`` (optionally from ``template``) and return its URL."""
        from psycopg import sql

        with psycopg.connect(self.url(), autocommit=True) as conn:
            if template is None:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
            else:
                conn.execute(
                    sql.SQL("CREATE DATABASE {} TEMPLATE {} STRATEGY FILE_COPY").format(
                        sql.Identifier(name), sql.Identifier(template)
                    )
                )
        return self.url(name)

    def drop_database(self, name: str) -> None:
        from psycopg import sql

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGINT)  # fast shutdown
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> TempPostgres:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


class TempReplica(TempPostgres):
    """A hot-standby streaming replica of a :class:`TempPostgres`, made by
    ``pg_basebackup -R`` (it follows the primary's WAL over a replication connection)."""

    def __init__(self, primary: TempPostgres) -> None:
        super().__init__(settings={"hot_standby": "on"})
        self.primary = primary

    def _create_data(self) -> None:
        log = self.root / "basebackup.log"
        with open(log, "wb") as out:
            done = subprocess.run(
                [
                    str(self.bindir / "pg_basebackup"),
                    "-D",
                    str(self.data),
                    "-h",
                    str(self.primary.root),
                    "-p",
                    str(self.primary.port),
                    "-U",
                    SUPERUSER,
                    "-R",  # write standby.signal and primary_conninfo
                    "-X",
                    "stream",
                    "--no-sync",
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                user=self.user,
                check=False,
            )
        if done.returncode != 0:
            raise CatalogError(f"pg_basebackup failed; see {log}")
