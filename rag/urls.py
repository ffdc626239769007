from django.urls import path

from rag import answer_apis, apis, conversation_apis, document_apis

app_name = "rag"

urlpatterns = [
    path("query", apis.QueryApi.as_view(), name="query"),
    path("ask", answer_apis.AskApi.as_view(), name="ask"),
    path("ask/stream", answer_apis.AskStreamApi.as_view(), name="ask-stream"),
    path("facets", answer_apis.FacetsApi.as_view(), name="facets"),
    path("conversations", conversation_apis.ConversationListApi.as_view(), name="conversations"),
    path("conversations/<str:conversation_id>", conversation_apis.ConversationDetailApi.as_view(), name="conversation"),
    # path: chunk uids embed source ids, which may hold slashes (file paths, Logseq pages).
    path("documents/<path:chunk_uid>", document_apis.DocumentApi.as_view(), name="document"),
]
