"""``POST /orders/`` places an order and enqueues its confirmation in one transaction;
``GET /tasks/<id>/`` shows the task's result."""

from __future__ import annotations

from django.db import transaction
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from orders.models import Order
from orders.tasks import send_confirmation


def create_order(email: str) -> tuple[Order, str]:
    """The order and its confirmation task, both or neither: the task is written in this
    transaction, so if anything below raises, no worker ever sees it."""
    with transaction.atomic():
        order = Order.objects.create(email=email)
        result = send_confirmation.enqueue(order.pk)
        if email.endswith(".invalid"):
            raise ValueError(f"{email!r} cannot receive mail")  # rolls back both
    return order, result.id


@csrf_exempt
@require_POST
def place_order(request: HttpRequest) -> JsonResponse:
    email = request.POST.get("email", "")
    try:
        order, task_id = create_order(email)
    except ValueError as exc:
        return JsonResponse({"error": str(exc)}, status=400)
    return JsonResponse({"order": order.pk, "task": task_id}, status=202)


@require_GET
def task_status(request: HttpRequest, result_id: str) -> JsonResponse:
    result = send_confirmation.get_result(result_id)
    body = {"status": result.status, "attempts": result.attempts}
    if result.is_finished and not result.errors:
        body["value"] = result.return_value
    return JsonResponse(body)
