from django.db import connection
from django.test import TestCase, skipIfDBFeature, skipUnlessDBFeature


class FeatureTests(TestCase):
    def test_skipped_by_features(self):
        self.fail("the backend's django_test_skips should have skipped this (mark_expected_failures_and_skips)")

    def test_expected_failure_by_features(self):
        self.fail("expected to fail by the backend's django_test_expected_failures")

    @skipUnlessDBFeature("supports_transactions")
    def test_runs_with_transactions(self):
        self.assertTrue(connection.features.supports_transactions)

    @skipIfDBFeature("supports_transactions")
    def test_skipped_with_transactions(self):
        self.fail("MariaDB supports transactions")

    @skipUnlessDBFeature("has_native_uuid_field")
    def test_skipped_unless_native_uuid(self):
        pass
