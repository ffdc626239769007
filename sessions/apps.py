from django.apps import AppConfig


class LearningSessionsConfig(AppConfig):
    """Guided learning sessions. The label keeps clear of ``django.contrib.sessions``."""

    name = "sessions"
    label = "learning_sessions"
    verbose_name = "Learning sessions"

    def ready(self):
        # The learning content is part of the demo (manage.py load_demo): rag never imports sessions.
        from rag.demo import register_demo_loader

        register_demo_loader("sessions.services", _import_learning_content)
        # Its part in an access request (manage.py export_user); forgetting is by cascade.
        from rag.privacy import PersonalData, register_personal_data
        from sessions.privacy import personal_data_export

        register_personal_data("sessions", PersonalData(export=personal_data_export))


def _import_learning_content():
    from sessions.services import learning_content_import  # imported when the demo loads

    return learning_content_import()
