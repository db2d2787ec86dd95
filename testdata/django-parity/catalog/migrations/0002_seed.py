from django.db import migrations


def seed(apps, schema_editor):
    Parent = apps.get_model("catalog", "Parent")
    for i, name in enumerate(["alpha", "beta", "gamma"], 1):
        Parent.objects.using(schema_editor.connection.alias).create(id=i, name=name)


class Migration(migrations.Migration):
    dependencies = [("catalog", "0001_initial")]
    operations = [migrations.RunPython(seed, migrations.RunPython.noop)]
