from __future__ import annotations

from django.contrib import admin
from django.urls import path
from orders import views

urlpatterns = [
    path("admin/", admin.site.urls),
    path("orders/", views.place_order),
    path("tasks/<str:result_id>/", views.task_status),
]
