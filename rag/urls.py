

app_name = "rag"

urlpatterns: list = []

# Answering (issue 5)
from rag import answer_apis  # noqa: E402

urlpatterns += [
    path("ask", answer_apis.AskApi.as_view(), name="ask"),
    path("ask/stream", answer_apis.AskStreamApi.as_view(), name="ask-stream"),
    path("facets", answer_apis.FacetsApi.as_view(), name="facets"),
]
