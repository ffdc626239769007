from django.urls import path

from rag import apis

app_name = "rag"

urlpatterns: list = [
    path("query", apis.QueryApi.as_view(), name="query"),
]
