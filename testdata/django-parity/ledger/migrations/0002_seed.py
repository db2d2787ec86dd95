from django.db import migrations


def seed(apps, schema_editor):
    Entry = apps.get_model("ledger", "Entry")
    for i, memo in enumerate(["first", "second"], 1):
        Entry.objects.using(schema_editor.connection.alias).create(id=i, parent_id=i, memo=memo)


class Migration(migrations.Migration):
    dependencies = [("ledger", "0001_initial")]
    operations = [migrations.RunPython(seed, migrations.RunPython.noop)]
