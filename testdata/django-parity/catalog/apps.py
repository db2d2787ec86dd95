from django.apps import AppConfig
from django.db.models.signals import post_migrate

# The aliases post_migrate was sent for in this process.
HANDLED = set()


def after_migrate(sender, using, apps=None, **kwargs):
    """A post_migrate handler with a process-side part (HANDLED) and a
    database part (a Tag row, made once)."""
    HANDLED.add(using)
    if using == "default" and apps is not None:
        Tag = apps.get_model("catalog", "Tag")
        Tag.objects.using(using).get_or_create(name="from-post-migrate")


class CatalogConfig(AppConfig):
    name = "catalog"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        post_migrate.connect(after_migrate, sender=self)
