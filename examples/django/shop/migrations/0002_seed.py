import json
from pathlib import Path

from django.db import migrations

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "products.json"


def seed(apps, schema_editor):
    Product = apps.get_model("shop", "Product")
    rows = json.loads(FIXTURE.read_text())
    Product.objects.bulk_create(Product(**r) for r in rows)


class Migration(migrations.Migration):
    dependencies = [("shop", "0001_initial")]
    operations = [migrations.RunPython(seed, migrations.RunPython.noop)]
