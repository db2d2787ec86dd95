"""ledger lives in the alias other; everything else in default."""


class Router:
    def _db(self, model):
        return "other" if model._meta.app_label == "ledger" else "default"

    db_for_read = db_for_write = lambda self, model, **hints: self._db(model)

    def allow_relation(self, a, b, **hints):
        return None

    def allow_migrate(self, db, app_label, model_name=None, **hints):
        return db == ("other" if app_label == "ledger" else "default")
