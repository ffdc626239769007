from django.apps import AppConfig


class IngestionConfig(AppConfig):
    name = "ingestion"
    verbose_name = "Ingestion"

    def ready(self):
        # Ingestion's part in re-keying and forgetting users, and its demo content, plug in
        # here: rag never imports ingestion.
        from ingestion.privacy import personal_data_export, personal_data_forget, personal_data_rekey
        from rag.demo import register_demo_corpus_indexer, register_demo_loader
        from rag.privacy import PersonalData, register_personal_data

        register_personal_data(
            "ingestion",
            PersonalData(rekey=personal_data_rekey, forget=personal_data_forget, export=personal_data_export),
        )
        register_demo_loader("ingestion.demo", _load_demo_content)
        register_demo_corpus_indexer(_index_demo_corpus)


def _index_demo_corpus(documents, embedder=None):
    from ingestion.services.demo_corpus import demo_corpus_load

    return demo_corpus_load(documents, embedder)


def _load_demo_content():
    from ingestion.demo import load_demo_content  # imported when the demo is loaded, not at start

    return load_demo_content()
