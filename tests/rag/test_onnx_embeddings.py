"""The ONNX Runtime backend of the local model: exported here from the package's weights, the same
vectors as torch (fp32) or close (int8), and switching backends is a model change, never a mix."""

from __future__ import annotations

import numpy as np
import pytest
from django.core.management import call_command

from rag.acl import Scope
from rag.embeddings import EmbeddingError, build_embedder
from rag.embeddings.onnx_export import export_model, outlier_channels, package_dir, split_outliers, tokenizer_for
from rag.models import Chunk, Conversation
from rag.search import chunk_search
from rag.selectors import EmbeddingModelMismatch
from tests.rag.factories import TOPICS, doc, load

pytest.importorskip("onnxruntime", reason="the onnx backend needs onnxruntime (pyproject lists it)")

TEXTS = [
    "A closure keeps the variables of the scope it was created in.",
    "hello",
    "What is the effect of aspirin on colorectal cancer risk in adults?",
    "Mitochondria produce most of the cell's ATP through oxidative phosphorylation. " * 30,  # past 256 tokens
]


def _local(backend: str):
    return build_embedder("local", model="all-MiniLM-L6-v2", dims=384, backend=backend)


@pytest.fixture(scope="module")
def torch_embedder():
    return _local("torch")


@pytest.fixture(scope="module")
def onnx_embedders():
    return {"onnx": _local("onnx"), "onnx-int8": _local("onnx-int8")}


def test_each_backend_names_its_own_vectors(torch_embedder, onnx_embedders):
    names = {torch_embedder.name, *(e.name for e in onnx_embedders.values())}
    assert names == {"local:all-MiniLM-L6-v2", "local:all-MiniLM-L6-v2+onnx", "local:all-MiniLM-L6-v2+onnx-int8.4"}


def test_the_default_runtime_is_onnx_int8(local_embedder):
    assert local_embedder.name == "local:all-MiniLM-L6-v2+onnx-int8.4"


def test_onnx_vectors_match_torch(torch_embedder, onnx_embedders):
    torch_vectors = np.array(torch_embedder.embed_documents(TEXTS))
    fp32 = np.array(onnx_embedders["onnx"].embed_documents(TEXTS))
    int8 = np.array(onnx_embedders["onnx-int8"].embed_documents(TEXTS))
    assert fp32.shape == int8.shape == (len(TEXTS), 384)
    assert np.allclose(np.linalg.norm(int8, axis=1), 1.0, atol=1e-5)
    assert (torch_vectors * fp32).sum(axis=1).min() > 0.9999
    # Outlier channels in fp32 keep int8 close: quantising every channel gives ~0.98 on "hello",
    # and so do 8-bit weights on a CPU without VNNI.
    assert (torch_vectors * int8).sum(axis=1).min() > 0.995
    # A query alone is the same vector as in a batch (padding does not leak into the pooling).
    assert np.allclose(onnx_embedders["onnx"].embed_query(TEXTS[1]), fp32[1], atol=1e-5)
    # int8 too: its activation scales come from the whole input, so it runs each text alone.
    for i, text in enumerate(TEXTS):
        assert np.array_equal(np.array(onnx_embedders["onnx-int8"].embed_query(text)), int8[i])


def test_outlier_channels_are_the_models_and_their_split_changes_no_output(tmp_path):
    """The int8 export takes a few large channels out of each product's input and adds their
    share back in fp32: found without any corpus, and in fp32 the rewritten model is the original."""
    import onnx
    import onnxruntime as ort

    fp32 = export_model(tmp_path, quantized=False)
    model = onnx.load(str(fp32))
    tokenizer = tokenizer_for(package_dir())
    channels = outlier_channels(model, tokenizer)
    assert channels == outlier_channels(model, tokenizer), "the channels depend on nothing but the model"
    assert len(channels) >= 10, "BERT's LayerNorm and GELU outputs carry outlier channels in every layer"
    kept = split_outliers(model, channels)
    assert len(kept) > len(channels)  # query, key and value share one input
    onnx.checker.check_model(model)
    # A bias is added to the int8 part, where ONNX Runtime folds it into the product, and the fp32
    # share joins after it, never between the product and its bias.
    weights = {init.name for init in model.graph.initializer}
    joins = {node.output[0] for node in model.graph.node if node.name.endswith("/joined")}
    biases = [node for node in model.graph.node if node.op_type == "Add" and set(node.input) & weights]
    assert not any(set(node.input) & joins for node in biases)
    assert sum(any(name.endswith("/inliers") for name in node.input) for node in biases) >= len(channels)

    split = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    original = ort.InferenceSession(str(fp32), providers=["CPUExecutionProvider"])
    for text in TEXTS:
        ids = np.array([tokenizer.encode(text).ids], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        assert np.allclose(split.run(None, feed)[0], original.run(None, feed)[0], atol=1e-4)


def test_attention_is_exported_without_the_fused_attentions_mask_guards(tmp_path):
    """PyTorch's fused attention exports operators in every layer that guard rows the mask leaves
    empty (IsNaN, then Where); a text runs alone, unpadded, so the export uses plain attention."""
    import onnx

    ops = [node.op_type for node in onnx.load(str(export_model(tmp_path, quantized=False))).graph.node]
    assert ops.count("Softmax") == 6, "one attention per layer"
    assert "IsNaN" not in ops and ops.count("Where") < 6


def test_int8_weights_fit_in_seven_bits_so_no_cpu_saturates_their_products(tmp_path):
    """CPUs without VNNI add each pair of uint8 x int8 products into a saturating 16-bit sum: full
    8-bit weights overflow it and move the vectors there alone. Every quantised weight of the
    export lies in -64..64, where no pair can overflow: every CPU computes the same products."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(export_model(tmp_path, quantized=True)))
    products = ("MatMulInteger", "DynamicQuantizeMatMul")
    quantised = {node.input[1] for node in model.graph.node if node.op_type in products}
    weights = [numpy_helper.to_array(init) for init in model.graph.initializer if init.name in quantised]
    assert len(weights) >= 36, "every layer's six weight products are quantised"
    assert all(w.dtype == np.int8 for w in weights)
    assert min(int(w.min()) for w in weights) >= -64 and max(int(w.max()) for w in weights) <= 64


@pytest.mark.parametrize("backend", ["onnx", "onnx-int8"])
def test_documents_run_one_batch_per_core_with_the_vectors_one_thread_makes(backend):
    """Documents run on a pool of single-threaded runs, several batches at once; each text gets the
    vector it gets alone on the query session (all cores on one input)."""
    from rag.embeddings.onnx import OnnxEmbedder

    embedder = OnnxEmbedder(quantized=backend == "onnx-int8", threads=2, batch_size=2)
    texts = TEXTS * 3
    vectors = np.array(embedder.embed_documents(texts))
    assert embedder._documents is not None, "the documents did not go through the pool"
    alone = np.array([embedder.embed_query(text) for text in texts])
    if backend == "onnx-int8":
        assert np.array_equal(vectors, alone)
    else:
        assert np.allclose(vectors, alone, atol=1e-5)


def test_an_unknown_backend_is_a_configuration_error():
    with pytest.raises(EmbeddingError, match="KNOWHUB_EMBEDDING_BACKEND"):
        _local("tensorrt")


@pytest.mark.django_db(transaction=True)
def test_switching_backend_is_a_reembed_never_a_mix(torch_embedder, onnx_embedders, settings):
    load([doc(key, title, text) for key, (title, text) in TOPICS.items()], torch_embedder)
    onnx = onnx_embedders["onnx"]
    with pytest.raises(EmbeddingModelMismatch, match="reembed"):
        chunk_search(query="what is a closure", scope=Scope.everything(), embedder=onnx)

    settings.KNOWHUB_EMBEDDING_BACKEND = "onnx"
    call_command("reembed", "--json")
    assert set(Chunk.objects.values_list("embedding_model", flat=True)) == {onnx.name}
    hits = chunk_search(query="what is a closure", scope=Scope.everything(), embedder=onnx).hits
    assert hits[0].source_id == "closures"
    with pytest.raises(EmbeddingModelMismatch):
        chunk_search(query="what is a closure", scope=Scope.everything(), embedder=torch_embedder)


@pytest.mark.django_db(transaction=True)
def test_a_question_to_an_index_of_another_runtime_says_to_reembed_never_a_500(torch_embedder, api_client, user):
    """After an upgrade that changes the default runtime's vectors (a new int8 recipe), the index
    still holds the old ones until `manage.py reembed`: a question is refused with that, as a search
    is (409), on the API, its stream and the CLI, and nothing is logged."""
    from django.core.management.base import CommandError

    from feedback.models import Interaction

    load([doc(key, title, text) for key, (title, text) in TOPICS.items()], torch_embedder)
    api_client.force_authenticate(user)
    for path in ("/rag/ask", "/rag/ask/stream"):
        response = api_client.post(path, {"query": "what is a closure"}, format="json")
        assert response.status_code == 409, path
        body = response.json()
        assert body["error"] == "embedding_model_mismatch" and "manage.py reembed" in body["detail"]
    with pytest.raises(CommandError, match="manage.py reembed"):
        call_command("ask", "what is a closure", "--all-projects")
    assert not Interaction.objects.exists() and not Conversation.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_demo_made_on_torch_follows_the_default_runtime(torch_embedder, local_embedder, tmp_path, settings):
    """A demo index made before the default runtime changed is moved by `load_demo` (the page
    would otherwise refuse every question as a mix of models); another model is left alone."""
    from rag.demo import demo_index_follow_runtime

    load([doc(key, title, text) for key, (title, text) in TOPICS.items()], torch_embedder)
    moved = demo_index_follow_runtime()
    assert moved and moved["model"] == local_embedder.name
    assert set(Chunk.objects.values_list("embedding_model", flat=True)) == {local_embedder.name}
    hits = chunk_search(query="what is a closure", scope=Scope.everything(), embedder=local_embedder).hits
    assert hits[0].source_id == "closures"
    assert demo_index_follow_runtime() is None  # nothing left to move

    Chunk.objects.filter(source_id="closures").update(embedding_model="openai:text-embedding-3-small")
    assert demo_index_follow_runtime() is None
