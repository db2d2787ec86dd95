"""Features that skip one test and expect another to fail, as Django's
backends do for Django's own suite (mark_expected_failures_and_skips)."""

from django.db.backends.mysql.features import DatabaseFeatures
from django.utils.functional import cached_property


class ParityFeatures(DatabaseFeatures):
    @cached_property
    def django_test_skips(self):
        skips = dict(super().django_test_skips)
        skips["parity: skipped by the backend's features"] = {
            "catalog.tests.test_features.FeatureTests.test_skipped_by_features"}
        return skips

    @cached_property
    def django_test_expected_failures(self):
        return set(super().django_test_expected_failures) | {
            "catalog.tests.test_features.FeatureTests.test_expected_failure_by_features"}
