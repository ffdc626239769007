"""The embedded server's memory settings follow the machine it starts on, and settings override them."""

from __future__ import annotations

from knowhub import embedded_db

GB = 2**30


def test_memory_settings_scale_with_ram_and_cores():
    small = embedded_db.memory_settings(2 * GB, 2, env={})
    assert small == {
        "shared_buffers": "512MB", "effective_cache_size": "1536MB", "maintenance_work_mem": "128MB",
        "max_parallel_maintenance_workers": "1", "max_wal_size": "1024MB",
    }  # fmt: skip
    big = embedded_db.memory_settings(64 * GB, 16, env={})
    assert big["shared_buffers"] == "16384MB" and big["effective_cache_size"] == "49152MB"
    assert big["maintenance_work_mem"] == "4096MB" and big["max_parallel_maintenance_workers"] == "8"
    tiny = embedded_db.memory_settings(256 * 2**20, 1, env={})
    assert tiny["shared_buffers"] == "128MB" and tiny["max_parallel_maintenance_workers"] == "1"


def test_wal_between_checkpoints_follows_the_free_disk():
    # A tenth of the free disk, never below PostgreSQL's default nor past 16 GB.
    assert embedded_db.memory_settings(8 * GB, 2, env={}, disk_free_bytes=80 * GB)["max_wal_size"] == "8192MB"
    assert embedded_db.memory_settings(8 * GB, 2, env={}, disk_free_bytes=2 * GB)["max_wal_size"] == "1024MB"
    assert embedded_db.memory_settings(8 * GB, 2, env={}, disk_free_bytes=900 * GB)["max_wal_size"] == "16384MB"
    values = embedded_db.memory_settings(8 * GB, 2, env={"KNOWHUB_PG_MAX_WAL_SIZE": "2GB"}, disk_free_bytes=80 * GB)
    assert values["max_wal_size"] == "2GB"


def test_settings_override_each_value():
    values = embedded_db.memory_settings(8 * GB, 4, env={"KNOWHUB_PG_SHARED_BUFFERS": "3GB"})
    assert values["shared_buffers"] == "3GB" and values["maintenance_work_mem"] == "512MB"


def test_the_conf_is_rewritten_and_included_once(tmp_path, monkeypatch):
    (tmp_path / "postgresql.conf").write_text("shared_buffers = 1GB\n")
    monkeypatch.setenv("KNOWHUB_PG_SHARED_BUFFERS", "2GB")
    embedded_db.write_memory_conf(tmp_path)
    monkeypatch.setenv("KNOWHUB_PG_SHARED_BUFFERS", "3GB")
    embedded_db.write_memory_conf(tmp_path)
    conf = (tmp_path / "postgresql.conf").read_text()
    assert conf.count("include_if_exists = 'knowhub.conf'") == 1
    assert conf.index("shared_buffers = 1GB") < conf.index("include_if_exists")  # included last: it wins
    assert "shared_buffers = '3GB'" in (tmp_path / "knowhub.conf").read_text()


def test_a_new_server_starts_with_the_machines_settings(tmp_path, monkeypatch):
    """pgserver starts a server the moment it initialises it; the tuning written after that must
    still be what the running server uses, not PostgreSQL's 128 MB default."""
    import psycopg

    pgdata = tmp_path / "pgdata"
    monkeypatch.setenv("KNOWHUB_PGDATA", str(pgdata))
    monkeypatch.setenv("KNOWHUB_PG_SHARED_BUFFERS", "192MB")
    server = embedded_db.get_server(tmp_path)
    try:
        uri = server.get_postmaster_info().get_uri(database="postgres")
        with psycopg.connect(uri, autocommit=True) as conn:
            assert conn.execute("SHOW shared_buffers").fetchone()[0] == "192MB"
            assert conn.execute("SHOW jit").fetchone()[0] == "off"  # the fixed tuning too
    finally:
        embedded_db._stop_server(server)


def test_an_empty_data_directory_setting_is_the_default_not_the_current_directory(monkeypatch, tmp_path):
    # As a path, "" is ".": the server would initialise (and take ownership of) wherever it ran.
    monkeypatch.setenv("KNOWHUB_PGDATA", "")
    assert embedded_db.pgdata_dir(tmp_path) == tmp_path / "var" / "pgdata"
    monkeypatch.setenv("KNOWHUB_PGDATA", str(tmp_path / "elsewhere"))
    assert embedded_db.pgdata_dir(tmp_path) == tmp_path / "elsewhere"
