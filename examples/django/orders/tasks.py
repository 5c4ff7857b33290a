"""The shop's tasks: plain ``django.tasks`` (here the django-tasks backport), run by Ratchet."""

from __future__ import annotations

try:  # Django 6
    from django.tasks import task
except ImportError:  # Django 4.2-5.2 with the django-tasks backport
    from django_tasks import task

from orders.models import Order


@task(priority=10)
def send_confirmation(order_id: int) -> str:
    # Runs on a worker (`./manage.py ratchet worker`), with the ORM as in a view.
    order = Order.objects.get(pk=order_id)
    order.confirmed = True
    order.save(update_fields=["confirmed"])
    return f"Confirmation sent to {order.email}"
