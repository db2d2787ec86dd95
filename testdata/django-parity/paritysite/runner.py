"""Runners that write every test's outcome to $PARITY_OUTCOMES as JSON
({test id: ok | fail | error | skip: reason | expected-failure |
unexpected-success}), so two runs can be compared test by test."""

import json
import os
import unittest

from django.test.runner import DiscoverRunner

from pristine_client.django.runner import PristineRunner


class OutcomeResult(unittest.TextTestResult):
    outcomes = {}

    def _put(self, test, outcome):
        OutcomeResult.outcomes[test.id()] = outcome

    def addSuccess(self, test):
        super().addSuccess(test)
        self._put(test, "ok")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._put(test, "fail")

    def addError(self, test, err):
        super().addError(test, err)
        self._put(test, "error")

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._put(test, "skip: " + reason)

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._put(test, "expected-failure")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._put(test, "unexpected-success")


class _Outcomes:
    def get_resultclass(self):
        return OutcomeResult

    def run_suite(self, suite, **kwargs):
        result = super().run_suite(suite, **kwargs)
        path = os.environ.get("PARITY_OUTCOMES")
        if path:
            with open(path, "w") as f:
                json.dump(OutcomeResult.outcomes, f, indent=1, sort_keys=True)
        return result


class StockOutcomeRunner(_Outcomes, DiscoverRunner):
    pass


class PristineOutcomeRunner(_Outcomes, PristineRunner):
    pass
