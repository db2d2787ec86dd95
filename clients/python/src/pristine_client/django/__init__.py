"""Django integration: a database backend whose test databases are pristine
leases instead of CREATE DATABASE + migrate + mysqldump clones.

In the settings your tests run with:

    DATABASES["default"]["ENGINE"] = "pristine_client.django"   # MariaDB/MySQL only
    TEST_RUNNER = "pristine_client.django.runner.PristineRunner"  # optional

`manage.py test --parallel N` then migrates once into a template (across
runs: the template is keyed by every input that shapes the schema: the
apps' migrations and models modules, the routers, TEST["PRISTINE"]["FILES"],
the settings that shape the schema), leases one slot for the main process
and one per worker, and returns them when the run ends. Aliases that name
the same server share one template and one lease; every run does what
Django's create_test_db does apart from migrating (see creation.py). Options, in
DATABASES[alias]["TEST"]["PRISTINE"]: TEMPLATE (name), FILES (more files
that define the test database: fixtures, SQL), POOL_SIZE (default: the
run's processes + 1), WAIT (seconds to wait for a free database).
"""
