"""ForkTestCase (pristine_client.django.testcases) through a daemon, on a
copy of testdata/django-parity: setUpTestData runs once per fork, across
processes and runs; every test gets a fresh copy of its state; a change of
the class's module makes a new fork."""

import pytest

pytest.importorskip("django")

from test_django import manage, project  # noqa: E402,F401 (the fixture)

FORKED = '''
import os

from django.test import TestCase

from catalog.models import Tag
from pristine_client.django.testcases import ForkTestCase


class LoadedOnce(ForkTestCase):
    databases = {"default"}

    @classmethod
    def setUpTestData(cls):
        with open(os.environ["FORK_LOADS"], "a") as f:
            f.write("loaded\\n")
        Tag.objects.bulk_create([Tag(name=f"fx{i}") for i in range(300)])

    def check(self, writer):
        self.assertEqual(Tag.objects.filter(name__startswith="fx").count(), 300)
        self.assertFalse(Tag.objects.filter(name__startswith="written").exists(), "another test's write")
        self.assertTrue(Tag.objects.filter(name="from-post-migrate").exists(), "the template's rows")
        Tag.objects.create(name=f"written by {writer}")  # committed: the next test has a copy of its own

    def test_a(self):
        self.check("a")

    def test_b(self):
        self.check("b")

    def test_c(self):
        self.check("c")


class OwnDatabaseUntouched(TestCase):
    databases = {"default"}

    def test_no_fixture_rows(self):
        self.assertFalse(Tag.objects.filter(name__startswith="fx").exists(), "the fork's rows in the process's database")
        self.assertFalse(Tag.objects.filter(name__startswith="written").exists())
'''

SETS_ATTRIBUTE = '''
from catalog.models import Tag
from pristine_client.django.testcases import ForkTestCase


class SetsAttribute(ForkTestCase):
    @classmethod
    def setUpTestData(cls):
        cls.tag = Tag.objects.create(name="fx-attribute")

    def test_x(self):
        pass
'''


def test_fork_test_case_loads_once_and_each_test_gets_a_copy(project, daemon, tmp_path, monkeypatch):
    (project / "catalog/tests/test_forked.py").write_text(FORKED)
    loads = tmp_path / "loads"
    monkeypatch.setenv("FORK_LOADS", str(loads))
    label = "catalog.tests.test_forked"

    def run():
        p = manage(project, daemon, label, "--parallel", "2", "-v", "2")
        assert p.returncode == 0, p.stderr
        assert "Ran 4 tests" in p.stderr, p.stderr
        return loads.read_text().count("loaded")

    assert run() == 1
    # Another run: the fork is found, setUpTestData does not run.
    assert run() == 1
    forks = [t for t in daemon.client.request("GET", "/v1/templates")[1] if t["name"].startswith("django-keytest.LoadedOnce-")]
    assert len(forks) == 1 and forks[0]["parent_name"] == "django-keytest", forks
    # The class's module changed: a new fork, loaded once more.
    with open(project / "catalog/tests/test_forked.py", "a") as f:
        f.write("\n# changed\n")
    assert run() == 2


def test_fork_test_case_refuses_class_attributes(project, daemon):
    (project / "catalog/tests/test_forkattr.py").write_text(SETS_ATTRIBUTE)
    p = manage(project, daemon, "catalog.tests.test_forkattr")
    assert p.returncode != 0
    assert "SetsAttribute.setUpTestData set tag on the class" in p.stderr, p.stderr
    assert "look the rows up in setUp" in p.stderr, p.stderr
