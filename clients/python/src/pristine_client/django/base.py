"""The backend Django loads for ENGINE = "pristine_client.django": Django's
MySQL backend with pristine's test database creation."""

from django.db.backends.mysql import base as mysql

from .creation import DatabaseCreation


class DatabaseWrapper(mysql.DatabaseWrapper):
    creation_class = DatabaseCreation
