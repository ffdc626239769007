from django.apps import AppConfig


class LearningSessionsConfig(AppConfig):
    """Guided learning sessions. The label keeps clear of ``django.contrib.sessions``."""

    name = "sessions"
    label = "learning_sessions"
    verbose_name = "Learning sessions"
