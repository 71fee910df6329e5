"""The transcript rows' trigram index built on their text with whitespace turned into a letter
(runs.search.INDEXED_TEXT), so it also holds the trigrams across word boundaries: a phrase of common words
(`broken in turn 3`) is looked up by its rare joins instead of rechecking every row that holds its words
(40,085 rows and a 2 s timeout at 1 GB before; docs/performance.md, "Search every transcript").

PostgreSQL only (SQLite has no search index); the expression must be the one runs.search queries through,
which tests/runs/test_search.py checks with EXPLAIN.
"""
from django.db import migrations

FORWARD = [
    "DROP INDEX IF EXISTS search_text_trgm",
    "CREATE INDEX search_text_trgm ON runs_searchtext USING gin (translate(text, E' \\t\\n\\r', 'qqqq') gin_trgm_ops)",
]
BACKWARD = [
    "DROP INDEX IF EXISTS search_text_trgm",
    "CREATE INDEX search_text_trgm ON runs_searchtext USING gin (text gin_trgm_ops)",
]


def _run(statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            for sql in statements:
                schema_editor.execute(sql)
    return run


class Migration(migrations.Migration):

    dependencies = [
        ("runs", "0012_judge_disagreements"),
    ]

    operations = [
        migrations.RunPython(_run(FORWARD), _run(BACKWARD), elidable=False),
    ]
