import os

from django.apps import apps
from django.core.cache import cache
from django.db import connection, connections
from django.test import SimpleTestCase, TestCase, TransactionTestCase

from catalog.apps import HANDLED, MIGRATE_SENDS
from catalog.models import Parent, Tag
from notes.models import Note


class PostMigrateTests(TestCase):
    def test_handler_ran_in_this_process(self):
        self.assertIn("default", HANDLED)
        self.assertIn("other", HANDLED)

    def test_migrate_sent_post_migrate_once_per_alias(self):
        self.assertEqual(MIGRATE_SENDS["default"], 1, MIGRATE_SENDS)
        self.assertEqual(MIGRATE_SENDS["other"], 1, MIGRATE_SENDS)

    def test_handler_row(self):
        self.assertTrue(Tag.objects.filter(name="from-post-migrate").exists())

    def test_contenttypes_and_permissions(self):
        from django.contrib.auth.models import Permission
        from django.contrib.contenttypes.models import ContentType

        self.assertTrue(ContentType.objects.filter(app_label="catalog", model="parent").exists())
        self.assertTrue(Permission.objects.filter(codename="add_parent").exists())


class CacheTableTests(TestCase):
    def test_database_cache(self):
        cache.set("k", "v", 60)
        self.assertEqual(cache.get("k"), "v")


class ModelsPackageTests(TestCase):
    def test_app_without_migrations(self):
        Note.objects.create(text="hello")
        self.assertEqual(Note.objects.count(), 1)


class SerializedRollbackTests(TransactionTestCase):
    """The seeded rows come back after a flush. Only default: Django 3.2's
    check_constraints after deserializing other looks for catalog_parent
    in other's database (the cross-database foreign key), on every path."""

    serialized_rollback = True
    databases = {"default"}

    def test_1_delete_seeded(self):
        # gamma: no seeded ledger entry references it.
        Parent.objects.filter(name="gamma").delete()
        Tag.objects.all().delete()
        self.assertEqual(Parent.objects.count(), 2)

    def test_2_seeded_again(self):
        self.assertEqual(Parent.objects.count(), 3)
        self.assertTrue(Tag.objects.filter(name="from-post-migrate").exists())


class FlushTests(TransactionTestCase):
    # Only notes' tables are flushed after it, and post_migrate is not sent
    # again (which would make content types that serialized rollback then
    # restores a second time).
    available_apps = ["notes"]

    def test_flushed_database_is_empty_of_new_rows(self):
        Note.objects.create(text="x")
        self.assertEqual(Note.objects.count(), 1)


class DirectCreateTests(SimpleTestCase):
    """A test of test tooling: connection.creation.create_test_db() called
    directly creates a database and migrates it, as Django documents."""

    databases = {"default"}

    def test_create_test_db_migrates(self):
        test = connection.settings_dict["TEST"]
        old_test_name, old_name = test.get("NAME"), connection.settings_dict["NAME"]
        test["NAME"] = "test_direct_%d" % os.getpid()
        try:
            name = connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
            try:
                self.assertEqual(connection.settings_dict["NAME"], name)
                with connection.cursor() as c:
                    c.execute("SELECT COUNT(*) FROM django_migrations WHERE app = 'catalog'")
                    self.assertEqual(c.fetchone()[0], 2)
                    c.execute("SELECT COUNT(*) FROM catalog_parent")
                    self.assertEqual(c.fetchone()[0], 3)
            finally:
                connection.creation.destroy_test_db(old_name, verbosity=0)
        finally:
            test["NAME"] = old_test_name
        self.assertEqual(connection.settings_dict["NAME"], old_name)
        with connection.cursor() as c:
            c.execute("SELECT DATABASE()")
            self.assertEqual(c.fetchone()[0], old_name)
        self.assertTrue(apps.is_installed("catalog"))


class TimeZoneTests(TestCase):
    def test_named_time_zones(self):
        # The time zone tables: loaded in pristine's base on MariaDB and
        # MySQL alike (mariadb-tzinfo-to-sql, MySQL's mysql_tzinfo_to_sql),
        # and by the stock path's server setup (scripts/parity-django.sh).
        with connection.cursor() as c:
            c.execute("SELECT CONVERT_TZ('2020-07-01 12:00:00', 'UTC', 'Europe/Paris')")
            self.assertEqual(str(c.fetchone()[0]), "2020-07-01 14:00:00")
