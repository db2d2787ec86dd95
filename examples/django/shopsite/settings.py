"""Settings of the example shop. The database comes from the environment:

    PRISTINE=1            test databases are pristine leases (ENGINE pristine_client.django)
    MYSQL_UNIX_PORT=SOCK  otherwise: a MariaDB server Django creates, migrates and clones itself
"""
import os
from pathlib import Path

import pymysql

pymysql.install_as_MySQLdb()

BASE_DIR = Path(__file__).resolve().parent.parent
SECRET_KEY = "example-only"
DEBUG = False
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.admin",
    "django.contrib.messages",
    "shop",
]

MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
TEMPLATES = [{
    "BACKEND": "django.template.backends.django.DjangoTemplates",
    "APP_DIRS": True,
    "OPTIONS": {"context_processors": [
        "django.template.context_processors.request",
        "django.contrib.auth.context_processors.auth",
        "django.contrib.messages.context_processors.messages",
    ]},
}]

if os.environ.get("PRISTINE"):
    DATABASES = {"default": {
        "ENGINE": "pristine_client.django",
        "NAME": "shop",
        "TEST": {"PRISTINE": {"TEMPLATE": "django-shop", "FILES": ["shop/fixtures"]}},
    }}
    TEST_RUNNER = "pristine_client.django.runner.PristineRunner"
else:
    DATABASES = {"default": {
        "ENGINE": "django.db.backends.mysql",
        "NAME": "shop",
        "HOST": os.environ.get("MYSQL_UNIX_PORT", "/run/mysqld/mysqld.sock"),
        "USER": os.environ.get("MYSQL_USER", "root"),
        "PASSWORD": os.environ.get("MYSQL_PWD", ""),
    }}
