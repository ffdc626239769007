"""BM25 term statistics kept by statement triggers on rag_chunk, and the rag_bm25() scorer."""

from django.db import migrations, models


# Signed per-lexeme deltas of the chunks in ``{rows}`` (columns collection, visibility,
# project_id, owner_hash, tsv, sign), one row per ACL partition and lexeme, plus the partition's
# '' row (live chunk count, total length in distinct lexemes).
_DELTAS = """
    INSERT INTO rag_term_stat (collection, visibility, project_id, owner_hash, lexeme, docs, length)
    SELECT r.collection, r.visibility, r.project_id, r.owner_hash, x.lexeme,
           sum(r.sign * x.docs), sum(r.sign * x.length)
    FROM ({rows}) r
    CROSS JOIN LATERAL (
        SELECT l AS lexeme, 1 AS docs, 0 AS length FROM unnest(tsvector_to_array(r.tsv)) AS l
        UNION ALL SELECT '', 1, length(r.tsv)
    ) x
    GROUP BY 1, 2, 3, 4, 5
    HAVING sum(r.sign * x.docs) <> 0 OR sum(r.sign * x.length) <> 0
"""
_COLS = "{t}.collection, {t}.visibility, {t}.project_id, {t}.owner_hash, {t}.tsv"
_CHANGED = (
    "(o.tsv, o.deleted_at IS NULL, o.collection, o.visibility, o.project_id, o.owner_hash) IS DISTINCT FROM "
    "(n.tsv, n.deleted_at IS NULL, n.collection, n.visibility, n.project_id, n.owner_hash)"
)
_INSERT_ROWS = f"SELECT {_COLS.format(t='n')}, 1 AS sign FROM new_rows n WHERE n.deleted_at IS NULL"
_DELETE_ROWS = f"SELECT {_COLS.format(t='o')}, -1 AS sign FROM old_rows o WHERE o.deleted_at IS NULL"
_UPDATE_ROWS = (
    f"SELECT {_COLS.format(t='o')}, -1 AS sign FROM old_rows o JOIN new_rows n ON n.id = o.id "
    f"WHERE o.deleted_at IS NULL AND {_CHANGED} "
    f"UNION ALL SELECT {_COLS.format(t='n')}, 1 AS sign FROM new_rows n JOIN old_rows o ON o.id = n.id "
    f"WHERE n.deleted_at IS NULL AND {_CHANGED}"
)

FORWARD = f"""
CREATE FUNCTION rag_term_stat_on_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN {_DELTAS.format(rows=_INSERT_ROWS)}; RETURN NULL; END $$;
CREATE FUNCTION rag_term_stat_on_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN {_DELTAS.format(rows=_UPDATE_ROWS)}; RETURN NULL; END $$;
CREATE FUNCTION rag_term_stat_on_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN {_DELTAS.format(rows=_DELETE_ROWS)}; RETURN NULL; END $$;

CREATE TRIGGER rag_chunk_term_stat_insert AFTER INSERT ON rag_chunk
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION rag_term_stat_on_insert();
CREATE TRIGGER rag_chunk_term_stat_update AFTER UPDATE ON rag_chunk
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION rag_term_stat_on_update();
CREATE TRIGGER rag_chunk_term_stat_delete AFTER DELETE ON rag_chunk
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION rag_term_stat_on_delete();

-- Okapi BM25 of one chunk for the query lexemes ``lexemes`` with their ``idfs``. Term frequency
-- is the lexeme's position count in the tsvector (title and content alike; PostgreSQL keeps at
-- most 256 positions per lexeme); document length is the number of distinct lexemes. setweight +
-- ts_filter keep only the query lexemes (tsv carries weights A and B only). rag.search inlines
-- the same formula (a function call per row costs more than the scoring).
CREATE OR REPLACE FUNCTION rag_bm25(tsv tsvector, lexemes text[], idfs float8[], avgdl float8, k1 float8, b float8)
RETURNS float8 LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(sum(q.idf * t.tf * (k1 + 1) / (t.tf + k1 * (1 - b + b * length(tsv) / avgdl))), 0)
    FROM (SELECT u.lexeme, cardinality(u.positions)::float8 AS tf
          FROM unnest(ts_filter(setweight(tsv, 'C', lexemes), '{{c}}')) u) t
    JOIN unnest(lexemes, idfs) AS q(lexeme, idf) ON q.lexeme = t.lexeme
$$;

{_DELTAS.format(rows=f"SELECT {_COLS.format(t='c')}, 1 AS sign FROM rag_chunk c WHERE c.deleted_at IS NULL")};
"""

BACKWARD = """
DROP TRIGGER IF EXISTS rag_chunk_term_stat_insert ON rag_chunk;
DROP TRIGGER IF EXISTS rag_chunk_term_stat_update ON rag_chunk;
DROP TRIGGER IF EXISTS rag_chunk_term_stat_delete ON rag_chunk;
DROP FUNCTION IF EXISTS rag_term_stat_on_insert();
DROP FUNCTION IF EXISTS rag_term_stat_on_update();
DROP FUNCTION IF EXISTS rag_term_stat_on_delete();
DROP FUNCTION IF EXISTS rag_bm25(tsvector, text[], float8[], float8, float8, float8);
"""


class Migration(migrations.Migration):

    dependencies = [
        ('rag', '0001_initial'),
    ]

    operations = [
        migrations.CreateModel(
            name='TermStat',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('collection', models.CharField(max_length=100)),
                ('visibility', models.CharField(max_length=20)),
                ('project_id', models.BigIntegerField(blank=True, null=True)),
                ('owner_hash', models.CharField(blank=True, default='', max_length=64)),
                ('lexeme', models.TextField()),
                ('docs', models.BigIntegerField(default=0)),
                ('length', models.BigIntegerField(default=0)),
            ],
            options={
                'db_table': 'rag_term_stat',
                'indexes': [models.Index(fields=['lexeme', 'collection'], name='termstat_lexeme_idx')],
            },
        ),
        migrations.RunSQL(FORWARD, BACKWARD),
    ]
