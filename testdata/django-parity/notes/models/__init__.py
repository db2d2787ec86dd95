# An app without migrations whose models are a package: migrate's
# run_syncdb makes its tables from these modules.
from .base import Note  # noqa: F401
