"""``./manage.py place_order EMAIL``: what ``POST /orders/`` does, from the command line."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from orders.views import create_order


class Command(BaseCommand):
    help = "Place an order and enqueue its confirmation (in one transaction)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("email")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            order, task_id = create_order(options["email"])
        except ValueError as exc:
            raise CommandError(f"{exc}; nothing was saved or enqueued.") from exc
        self.stdout.write(f"Order {order.pk} placed; confirmation task {task_id}")
