from django.db import IntegrityError, connections, transaction
from django.test import TestCase

from catalog.models import Parent
from ledger.models import Entry


class CrossDatabaseTests(TestCase):
    databases = {"default", "other"}

    def test_seeded_in_both(self):
        self.assertEqual(list(Parent.objects.order_by("id").values_list("name", flat=True)), ["alpha", "beta", "gamma"])
        self.assertEqual(Entry.objects.count(), 2)

    def test_join_across_databases(self):
        default = connections["default"].settings_dict["NAME"]
        other = connections["other"].settings_dict["NAME"]
        with connections["other"].cursor() as c:
            c.execute(f"SELECT e.memo, p.name FROM `{other}`.ledger_entry e "
                      f"JOIN `{default}`.catalog_parent p ON p.id = e.parent_id ORDER BY e.id")
            self.assertEqual(c.fetchall(), (("first", "alpha"), ("second", "beta")))

    def test_foreign_key_to_the_other_database(self):
        with connections["other"].cursor() as c:
            c.execute("SELECT COUNT(*) FROM information_schema.REFERENTIAL_CONSTRAINTS "
                      "WHERE CONSTRAINT_SCHEMA = DATABASE() AND CONSTRAINT_NAME = 'ledger_entry_parent'")
            self.assertEqual(c.fetchone()[0], 1)

    def test_foreign_key_accepts_a_seeded_parent(self):
        Entry.objects.create(parent_id=3, memo="third")
        self.assertEqual(Entry.objects.count(), 3)

    def test_foreign_key_rejects_an_orphan(self):
        with self.assertRaises(IntegrityError):
            with transaction.atomic(using="other"):
                Entry.objects.create(parent_id=999, memo="orphan")
