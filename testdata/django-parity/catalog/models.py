from django.db import models


class Parent(models.Model):
    name = models.CharField(max_length=40, unique=True)


class Tag(models.Model):
    name = models.CharField(max_length=40, unique=True)
