"""Load the realms and topics shipped in sessions/data, so /learn/ works right after migrate.

Re-running ``manage.py import_learning_content`` later picks up edits to the files.
"""

from django.db import migrations


def load(apps, schema_editor):
    from sessions.content import load_content, upsert_content

    realms, topics, _ = load_content()
    upsert_content(
        realms=realms,
        topics=topics,
        realm_model=apps.get_model("learning_sessions", "Realm"),
        topic_model=apps.get_model("learning_sessions", "Topic"),
    )


class Migration(migrations.Migration):
    dependencies = [("learning_sessions", "0002_realms_topics")]

    operations = [migrations.RunPython(load, migrations.RunPython.noop)]
