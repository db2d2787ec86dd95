from django.apps import AppConfig
from django.db.models.signals import post_migrate

from collections import Counter

# The aliases post_migrate was sent for in this process.
HANDLED = set()
# How often migrate sent it, per alias (flush sends it too, with no plan):
# once per run's setup, as on the stock path, whether this run built the
# template or not.
MIGRATE_SENDS = Counter()


def after_migrate(sender, using, apps=None, plan=None, **kwargs):
    """A post_migrate handler with a process-side part (HANDLED,
    MIGRATE_SENDS) and a database part (a Tag row, made once)."""
    HANDLED.add(using)
    if plan is not None:
        MIGRATE_SENDS[using] += 1
    if using == "default" and apps is not None:
        Tag = apps.get_model("catalog", "Tag")
        Tag.objects.using(using).get_or_create(name="from-post-migrate")


class CatalogConfig(AppConfig):
    name = "catalog"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        post_migrate.connect(after_migrate, sender=self)
