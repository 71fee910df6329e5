"""Judge reasoning leaves the import's path: its trigram index moves from the verdict table to ReasoningText,
which a background step fills for the attempts in ReasoningPending after the verdicts' transaction commits
(runs.search_index).

PostgreSQL: the verdict table's statement triggers list the attempts of verdicts whose reasoning an update changed in
ReasoningPending (the writers of new verdicts list theirs: a trigger on inserts would hold a copy of every row of a
million-verdict import), and drop the copies of deleted verdicts.
The reasoning stored before is copied here and indexed in one build, so search keeps its speed across the
upgrade. SQLite has no search index: the tables stay empty there and search reads the verdicts.
"""

from django.db import migrations, models

POSTGRES_FORWARD = [
    "INSERT INTO runs_reasoningtext (verdict_id, attempt_id, text) "
    "SELECT id, attempt_id, reasoning FROM runs_verdict WHERE reasoning <> ''",
    "CREATE INDEX reasoning_text_trgm ON runs_reasoningtext USING gin (text gin_trgm_ops)",
    """
    CREATE FUNCTION runs_reasoning_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO runs_reasoningpending (attempt_id)
        SELECT DISTINCT after.attempt_id FROM after JOIN before ON before.id = after.id
        WHERE after.reasoning IS DISTINCT FROM before.reasoning ORDER BY 1
        ON CONFLICT (attempt_id) DO UPDATE SET attempt_id = EXCLUDED.attempt_id;
        RETURN NULL;
    END $$
    """,
    """
    CREATE FUNCTION runs_reasoning_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        DELETE FROM runs_reasoningtext t USING gone WHERE t.verdict_id = gone.id;
        RETURN NULL;
    END $$
    """,
    "CREATE TRIGGER verdict_reasoning_changed AFTER UPDATE ON runs_verdict REFERENCING OLD TABLE AS before "
    "NEW TABLE AS after FOR EACH STATEMENT EXECUTE FUNCTION runs_reasoning_changed()",
    "CREATE TRIGGER verdict_reasoning_deleted AFTER DELETE ON runs_verdict REFERENCING OLD TABLE AS gone "
    "FOR EACH STATEMENT EXECUTE FUNCTION runs_reasoning_deleted()",
    # last: dropping it locks the verdict table until the migration commits
    "DROP INDEX IF EXISTS verdict_reasoning_trgm",
]
POSTGRES_BACKWARD = [
    "DROP TRIGGER IF EXISTS verdict_reasoning_changed ON runs_verdict",
    "DROP TRIGGER IF EXISTS verdict_reasoning_deleted ON runs_verdict",
    "DROP FUNCTION IF EXISTS runs_reasoning_changed()",
    "DROP FUNCTION IF EXISTS runs_reasoning_deleted()",
    "DROP INDEX IF EXISTS reasoning_text_trgm",
    "CREATE INDEX verdict_reasoning_trgm ON runs_verdict USING gin (reasoning gin_trgm_ops) WHERE reasoning <> ''",
]


def _run(statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            for sql in statements:
                schema_editor.execute(sql)

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0017_reported_figure"),
    ]

    operations = [
        migrations.CreateModel(
            name="ReasoningPending",
            fields=[
                ("attempt_id", models.BigIntegerField(primary_key=True, serialize=False)),
            ],
        ),
        migrations.CreateModel(
            name="ReasoningText",
            fields=[
                ("verdict_id", models.BigIntegerField(primary_key=True, serialize=False)),
                ("attempt_id", models.BigIntegerField(db_index=True)),
                ("text", models.TextField()),
            ],
        ),
        migrations.RunPython(_run(POSTGRES_FORWARD), _run(POSTGRES_BACKWARD), elidable=False),
    ]
