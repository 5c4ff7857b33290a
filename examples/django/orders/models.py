from __future__ import annotations

from django.db import models


class Order(models.Model):
    email = models.EmailField()
    confirmed = models.BooleanField(default=False)

    def __str__(self) -> str:
        return f"Order {self.pk} for {self.email}"
