from django.db import models


class Entry(models.Model):
    # A foreign key to catalog_parent in the alias default's database,
    # made in SQL by migration 0001 (Django has no cross-database relations).
    parent_id = models.BigIntegerField()
    memo = models.CharField(max_length=40)
