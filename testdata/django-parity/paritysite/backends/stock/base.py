from django.db.backends.mysql import base
from django.db.backends.mysql.creation import DatabaseCreation

from ..features import ParityFeatures


class ParityCreation(DatabaseCreation):
    def _destroy_test_db(self, test_database_name, verbosity):
        # test_parity_other's foreign key references test_parity, which
        # MariaDB refuses to drop with foreign key checks on (pristine
        # drops nothing: it resets the slot).
        with self._nodb_cursor() as cursor:
            cursor.execute("SET FOREIGN_KEY_CHECKS = 0")
            cursor.execute("DROP DATABASE %s" % self.connection.ops.quote_name(test_database_name))


class DatabaseWrapper(base.DatabaseWrapper):
    features_class = ParityFeatures
    creation_class = ParityCreation
