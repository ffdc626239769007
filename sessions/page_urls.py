"""Learner pages, mounted at ``/learn/``."""

from django.urls import path

from sessions import views

app_name = "learn"

urlpatterns = [
    path("", views.learn_home, name="home"),
    path("login/", views.LearnLoginView.as_view(), name="login"),
    path("history/", views.session_history_page, name="history"),
    path("<slug:realm>/start", views.session_start_page, name="start"),
    path("session/<int:pk>/", views.session_page, name="session"),
    path("session/<int:pk>/chat", views.session_chat_page, name="chat"),
    path("session/<int:pk>/finish", views.session_finish_page, name="finish"),
    path("session/<int:pk>/summary/", views.session_summary_page, name="summary"),
    path("session/<int:pk>/contest", views.session_contest_page, name="contest"),
]
