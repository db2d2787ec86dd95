"""An optional test runner: it tells the pristine backend how many
processes the run uses (so the pool is sized to fit) and, with
--pristine-keep-failed, keeps the databases of a run with failures and
prints how to open them."""

import multiprocessing

import django
from django.test.runner import DiscoverRunner

from .creation import run_state


class PristineRunner(DiscoverRunner):
    def __init__(self, pristine_keep_failed=False, **kwargs):
        super().__init__(**kwargs)
        self.pristine_keep_failed = pristine_keep_failed
        # Python 3.14 starts multiprocessing workers with forkserver by
        # default on Linux; Django before 6.0 sets up --parallel workers
        # only under fork (inherited) or spawn (set up again), so a
        # forkserver worker dies with AppRegistryNotReady. Take fork, the
        # method those Djangos were made for on Linux.
        if django.VERSION < (6, 0) and multiprocessing.get_start_method() == "forkserver":
            multiprocessing.set_start_method("fork", force=True)

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
