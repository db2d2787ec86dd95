from django.db import connections, migrations, models


def cross_database_fk(apps, schema_editor):
    """ledger_entry.parent_id references catalog_parent in the database of
    the alias default: both databases must be on one server."""
    default = connections["default"].settings_dict["NAME"]
    schema_editor.execute(
        "ALTER TABLE ledger_entry ADD CONSTRAINT ledger_entry_parent FOREIGN KEY (parent_id) "
        "REFERENCES `%s`.catalog_parent (id)" % default.replace("`", "``"))


class Migration(migrations.Migration):
    atomic = False  # DDL in RunPython: MariaDB cannot roll DDL back
    initial = True
    dependencies = []
    operations = [
        migrations.CreateModel("Entry", [
            ("id", models.AutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
            ("parent_id", models.BigIntegerField()),
            ("memo", models.CharField(max_length=40)),
        ]),
        migrations.RunPython(cross_database_fk, migrations.RunPython.noop),
    ]
