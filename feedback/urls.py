"""Mounted under ``rag/`` (before rag's own include): ``POST /rag/feedback``, ``POST /rag/feedback/click``."""

from django.urls import path

from feedback import apis

app_name = "feedback"

urlpatterns = [
    path("feedback", apis.FeedbackApi.as_view(), name="feedback"),
    path("feedback/click", apis.ClickApi.as_view(), name="click"),
]
