"""ONNX Runtime as a query-embedding peer (run in bench/.cache/peers-venv; see bench/embedding.py).

    python bench/peer_onnx.py build MODEL.gguf OUT_DIR
    python bench/peer_onnx.py time OUT_DIR QUERIES.json RUNS

No ONNX file of the bundled model can be downloaded here, so `build` writes one from the
GGUF's own weights: the BERT encoder (embeddings, 6 layers of attention and GELU feed-forward,
LayerNorm), mean pooling and L2 normalization, float32 (`model.onnx`), and the same
quantized dynamically to int8 by ONNX Runtime (`model.int8.onnx`); the WordPiece vocabulary
is the GGUF's, its word pieces written back as `##piece` (llama.cpp marks words instead).
`time` embeds each query on one thread (as Mnemo embeds a query) and prints, as JSON, each
query's vector and the CPU milliseconds of this process over RUNS rounds.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

OPSET = 17


def _weights(path: Path) -> tuple[dict[str, np.ndarray], dict]:
    from gguf import GGUFReader

    reader = GGUFReader(str(path))
    tensors = {t.name: np.asarray(t.data, dtype=np.float32) for t in reader.tensors}

    def field(name: str):
        f = reader.fields[name]
        value = f.parts[f.data[0]]
        return bytes(value).decode() if f.types[0].name == "STRING" else value.tolist()[0]

    tokens = reader.fields["tokenizer.ggml.tokens"]
    vocab = [bytes(tokens.parts[i]).decode() for i in tokens.data]
    meta = {
        "layers": field("bert.block_count"),
        "heads": field("bert.attention.head_count"),
        "eps": field("bert.attention.layer_norm_epsilon"),
        "max_tokens": field("mnemo.max_seq_length"),
        "vocab": vocab,
    }
    return tensors, meta


def _word_pieces(vocab: list[str]) -> list[str]:
    """llama.cpp writes a word's start as `▁word` and a piece as `piece`: back to WordPiece."""
    out = []
    for token in vocab:
        if token.startswith("[") and token.endswith("]"):
            out.append(token)
        elif token.startswith("\u2581"):
            out.append(token[1:])
        else:
            out.append("##" + token)
    return out


def build(gguf: Path, out: Path) -> None:
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from onnxruntime.quantization import QuantType, quantize_dynamic

    w, meta = _weights(gguf)
    dim = w["token_embd_norm.weight"].shape[0]
    heads, eps = meta["heads"], float(meta["eps"])
    head_dim = dim // heads
    nodes, inits = [], []

    def const(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def node(op: str, inputs: list[str], name: str, **attrs) -> str:
        nodes.append(helper.make_node(op, inputs, [name], name=name, **attrs))
        return name

    def dense(x: str, prefix: str, name: str) -> str:
        weight = const(f"{prefix}.w", w[f"{prefix}.weight"].T)  # (in, out)
        bias = const(f"{prefix}.b", w[f"{prefix}.bias"])
        return node("Add", [node("MatMul", [x, weight], f"{name}.mm"), bias], name)

    def norm(x: str, prefix: str, name: str) -> str:
        scale = const(f"{prefix}.g", w[f"{prefix}.weight"])
        bias = const(f"{prefix}.beta", w[f"{prefix}.bias"])
        return node("LayerNormalization", [x, scale, bias], name, axis=-1, epsilon=eps)

    ids = "input_ids"
    const("tok", w["token_embd.weight"])
    const("pos", w["position_embd.weight"])
    const("type0", w["token_types.weight"][0])
    const("zero", np.array([0], dtype=np.int64))
    const("one", np.array([1], dtype=np.int64))
    const("two", np.array([2], dtype=np.int64))
    const("heads_shape", np.array([0, 0, heads, head_dim], dtype=np.int64))
    const("dim_shape", np.array([0, 0, dim], dtype=np.int64))
    const("inv_sqrt_d", np.array(1 / np.sqrt(head_dim), dtype=np.float32))
    const("half", np.array(0.5, dtype=np.float32))
    const("unit", np.array(1.0, dtype=np.float32))
    const("inv_sqrt2", np.array(1 / np.sqrt(2), dtype=np.float32))
    # the first `tokens` rows of the position table (1-D starts and ends, as Slice wants)
    length = node("Slice", [node("Shape", [ids], "shape"), "one", "two"], "length")
    positions = node("Slice", ["pos", "zero", length, "zero"], "pos_e")
    x = node("Add", [node("Gather", ["tok", ids], "tok_e"), positions], "e1")
    x = norm(node("Add", [x, "type0"], "e2"), "token_embd_norm", "emb")
    for i in range(meta["layers"]):
        p = f"blk.{i}"

        def split(t: str, name: str) -> str:  # (1, L, dim) -> (1, heads, L, head_dim)
            shaped = node("Reshape", [t, "heads_shape"], f"{name}.r")
            return node("Transpose", [shaped], f"{name}.t", perm=[0, 2, 1, 3])

        q = split(dense(x, f"{p}.attn_q", f"{p}.q"), f"{p}.qh")
        k = node(
            "Transpose",
            [split(dense(x, f"{p}.attn_k", f"{p}.k"), f"{p}.kh")],
            f"{p}.kt",
            perm=[0, 1, 3, 2],
        )
        v = split(dense(x, f"{p}.attn_v", f"{p}.v"), f"{p}.vh")
        scores = node("Mul", [node("MatMul", [q, k], f"{p}.qk"), "inv_sqrt_d"], f"{p}.scaled")
        ctx = node("MatMul", [node("Softmax", [scores], f"{p}.sm", axis=-1), v], f"{p}.ctx")
        ctx = node(
            "Reshape",
            [node("Transpose", [ctx], f"{p}.ctxt", perm=[0, 2, 1, 3]), "dim_shape"],
            f"{p}.ctxr",
        )
        x = norm(
            node("Add", [x, dense(ctx, f"{p}.attn_output", f"{p}.o")], f"{p}.res1"),
            f"{p}.attn_output_norm",
            f"{p}.n1",
        )
        up = dense(x, f"{p}.ffn_up", f"{p}.up")
        erf = node("Erf", [node("Mul", [up, "inv_sqrt2"], f"{p}.us")], f"{p}.erf")
        gelu = node(
            "Mul",
            [node("Mul", [up, "half"], f"{p}.uh"), node("Add", [erf, "unit"], f"{p}.e1")],
            f"{p}.gelu",
        )
        x = norm(
            node("Add", [x, dense(gelu, f"{p}.ffn_down", f"{p}.down")], f"{p}.res2"),
            f"{p}.layer_output_norm",
            f"{p}.n2",
        )
    pooled = node("ReduceMean", [x], "pooled", axes=[1], keepdims=0)
    length2 = node("ReduceL2", [pooled], "l2", axes=[1], keepdims=1)
    node("Div", [pooled, length2], "embedding")
    graph = helper.make_graph(
        nodes,
        "minilm",
        [helper.make_tensor_value_info(ids, TensorProto.INT64, [1, "tokens"])],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, [1, dim])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    onnx.checker.check_model(model)
    out.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(out / "model.onnx"))
    quantize_dynamic(
        str(out / "model.onnx"), str(out / "model.int8.onnx"), weight_type=QuantType.QInt8
    )
    (out / "vocab.txt").write_text("\n".join(_word_pieces(meta["vocab"])) + "\n")
    (out / "meta.json").write_text(json.dumps({"max_tokens": meta["max_tokens"]}))


def time_queries(out: Path, queries: list[str], runs: int) -> dict:
    import onnxruntime as ort
    from tokenizers import BertWordPieceTokenizer

    tokenizer = BertWordPieceTokenizer(str(out / "vocab.txt"), lowercase=True)
    tokenizer.enable_truncation(json.loads((out / "meta.json").read_text())["max_tokens"])
    result = {}
    for kind in ("model.onnx", "model.int8.onnx"):
        options = ort.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = 1  # as Mnemo's queries
        session = ort.InferenceSession(str(out / kind), options, providers=["CPUExecutionProvider"])

        def embed(text: str, session=session) -> np.ndarray:
            ids = np.array([tokenizer.encode(text).ids], dtype=np.int64)
            return session.run(None, {"input_ids": ids})[0][0]

        vectors = [embed(q).tolist() for q in queries]  # warm, and the vectors compared
        cpu = []
        for _ in range(runs):
            for q in queries:
                started = time.process_time()
                embed(q)
                cpu.append((time.process_time() - started) * 1000)
        result[kind] = {"vectors": vectors, "cpu_ms": cpu}
    return result


if __name__ == "__main__":
    if sys.argv[1] == "build":
        build(Path(sys.argv[2]), Path(sys.argv[3]))
    else:
        queries = json.loads(Path(sys.argv[3]).read_text())
        print(json.dumps(time_queries(Path(sys.argv[2]), queries, int(sys.argv[4]))))
