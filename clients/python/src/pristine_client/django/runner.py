"""An optional test runner: it tells the pristine backend how many
processes the run uses (so the pool is sized to fit) and, with
--pristine-keep-failed, keeps the databases of a run with failures and
prints how to open them."""

from django.test.runner import DiscoverRunner

from .creation import run_state


class PristineRunner(DiscoverRunner):
    def __init__(self, pristine_keep_failed=False, **kwargs):
        super().__init__(**kwargs)
        self.pristine_keep_failed = pristine_keep_failed

    @classmethod
    def add_arguments(cls, parser):
        super().add_arguments(parser)
        parser.add_argument("--pristine-keep-failed", action="store_true",
                            help="keep the test databases of a run with failures, and print their DSNs")

    def setup_databases(self, **kwargs):
        run_state["parallel"] = self.parallel
        return super().setup_databases(**kwargs)

    def run_suite(self, suite, **kwargs):
        result = super().run_suite(suite, **kwargs)
        run_state["keep"] = self.pristine_keep_failed and not result.wasSuccessful()
        return result
