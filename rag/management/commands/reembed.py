"""``manage.py reembed``: move the whole index to another embedding provider, no downtime."""

import json

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from rag.embeddings import EmbeddingError, build_embedder
from rag.models import Chunk
from rag.selectors import embedding_column_dims
from rag.services import index_reembed


class Command(BaseCommand):
    help = (
        "Re-embed every chunk with a provider (default: the configured one). Search keeps "
        "answering from the old vectors until a single short swap at the end."
    )

    def add_arguments(self, parser):
        parser.add_argument("--provider", default=settings.KNOWHUB_EMBEDDING_PROVIDER)
        parser.add_argument("--model", default=None)
        parser.add_argument("--dims", type=int, default=None)
        parser.add_argument("--base-url", default=settings.KNOWHUB_EMBEDDING_BASE_URL)
        parser.add_argument(
            "--backend", default=settings.KNOWHUB_EMBEDDING_BACKEND,
            help="the local model's runtime: torch, onnx, onnx-int8",
        )
        parser.add_argument("--batch-size", type=int, default=settings.KNOWHUB_EMBEDDING_BATCH)
        parser.add_argument("--force", action="store_true", help="re-embed even if already on that model")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **o):
        default_model, default_dims = settings.KNOWHUB_EMBEDDING_PROVIDER_DEFAULTS.get(o["provider"], ("", 0))
        same_provider = o["provider"] == settings.KNOWHUB_EMBEDDING_PROVIDER
        model = o["model"] or (settings.KNOWHUB_EMBEDDING_MODEL if same_provider else default_model)
        dims = o["dims"] or (settings.KNOWHUB_EMBEDDING_DIMS if same_provider else default_dims)
        try:
            target = build_embedder(o["provider"], model=model, dims=dims, base_url=o["base_url"], backend=o["backend"])
            configured = build_embedder(
                settings.KNOWHUB_EMBEDDING_PROVIDER, model=settings.KNOWHUB_EMBEDDING_MODEL,
                dims=settings.KNOWHUB_EMBEDDING_DIMS, base_url=settings.KNOWHUB_EMBEDDING_BASE_URL,
            ).name  # fmt: skip
        except EmbeddingError as exc:
            raise CommandError(str(exc)) from exc
        models = set(Chunk.objects.values_list("embedding_model", flat=True).distinct())
        if models <= {target.name} and dims == embedding_column_dims() and not o["force"]:
            result = {"reembedded": 0, "model": target.name, "dims": dims, "detail": "already on this model"}
        else:
            total = Chunk.objects.count()
            with tqdm(total=total, unit="chunk", disable=o["json"], desc=f"re-embedding with {target.name}") as bar:
                result = index_reembed(target=target, batch_size=o["batch_size"], progress=bar.update)
        if o["json"]:
            self.stdout.write(json.dumps(result))
        else:
            self.stdout.write(f"{result['reembedded']} chunks now embedded with {result['model']} ({dims} dims)")
            if target.name != configured or dims != settings.KNOWHUB_EMBEDDING_DIMS:
                backend = f" KNOWHUB_EMBEDDING_BACKEND={o['backend']}" if o["provider"] == "local" else ""
                self.stdout.write(
                    "Now point the app at it: KNOWHUB_EMBEDDING_PROVIDER="
                    f"{o['provider']} KNOWHUB_EMBEDDING_MODEL={model} KNOWHUB_EMBEDDING_DIMS={dims}{backend}"
                )
