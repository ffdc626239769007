from django.urls import path

from rag import answer_apis, apis

app_name = "rag"

urlpatterns = [
    path("query", apis.QueryApi.as_view(), name="query"),
    path("ask", answer_apis.AskApi.as_view(), name="ask"),
    path("ask/stream", answer_apis.AskStreamApi.as_view(), name="ask-stream"),
    path("facets", answer_apis.FacetsApi.as_view(), name="facets"),
]
