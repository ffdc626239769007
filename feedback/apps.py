from django.apps import AppConfig


class FeedbackConfig(AppConfig):
    name = "feedback"
    verbose_name = "Feedback"

    def ready(self):
        # Learned ranking plugs into search, and the interaction log into search and ask, here:
        # the index app never imports feedback.
        from django.db.models.signals import post_delete, post_save

        from feedback.ranking import forget_active_weights, rescore
        from feedback.selectors import conversation_turn_counts, conversation_turns
        from feedback.services import (
            interaction_record,
            interactions_delete_of_user,
            personal_data_export,
            personal_data_forget,
        )
        from rag.interactions import InteractionLog, register_interaction_log
        from rag.privacy import PersonalData, register_personal_data
        from rag.search import register_rescorer

        register_rescorer(rescore)
        # The rescorer caches the active ranking weights per process: a saved configuration
        # (activation saves the one made active) drops them.
        post_save.connect(forget_active_weights, sender="feedback.RankingConfig", dispatch_uid="ranking-weights")
        post_delete.connect(forget_active_weights, sender="feedback.RankingConfig", dispatch_uid="ranking-weights-del")
        register_interaction_log(
            InteractionLog(
                record=interaction_record,
                turns=conversation_turns,
                turn_counts=conversation_turn_counts,
                delete_of_user=interactions_delete_of_user,
            )
        )
        register_personal_data("feedback", PersonalData(forget=personal_data_forget, export=personal_data_export))
