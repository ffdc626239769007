"""REST routes, mounted at ``/sessions/``."""

from django.urls import path

from sessions import apis

app_name = "sessions_api"

urlpatterns = [
    path("start", apis.SessionStartApi.as_view(), name="start"),
    path("realms", apis.RealmListApi.as_view(), name="realms"),
    path("<int:pk>", apis.SessionDetailApi.as_view(), name="detail"),
    path("<int:pk>/chat", apis.SessionChatApi.as_view(), name="chat"),
    path("<int:pk>/chat/stream", apis.SessionChatStreamApi.as_view(), name="chat-stream"),
    path("<int:pk>/finish", apis.SessionFinishApi.as_view(), name="finish"),
    path("<int:pk>/contest", apis.SessionContestApi.as_view(), name="contest"),
]
