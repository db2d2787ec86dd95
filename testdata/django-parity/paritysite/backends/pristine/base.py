from pristine_client.django import base

from ..features import ParityFeatures


class DatabaseWrapper(base.DatabaseWrapper):
    features_class = ParityFeatures
