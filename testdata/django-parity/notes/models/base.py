from django.db import models


class Note(models.Model):
    text = models.CharField(max_length=80)

    class Meta:
        app_label = "notes"
