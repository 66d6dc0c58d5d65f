"""Torch-free converter: a sentence-transformers / Hugging Face BERT folder to GGUF.

It writes what llama.cpp's own converter writes for `BertModel` (architecture `bert`,
WordPiece vocabulary in the '▁' phantom-space form, token types, pooling type, special
token ids), plus Mnemo's keys: the sentence-transformers sequence limit and provenance.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from app.core.errors import InputError

# Our own metadata keys; llama.cpp ignores keys it does not know.
KEY_MAX_SEQ = "mnemo.max_seq_length"
KEY_NORMALIZE = "mnemo.normalize"
KEY_SOURCE = "mnemo.source"

OUT_TYPES = ("f16", "q8_0", "f32")


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read {path}: {exc}") from exc


def _pooling_type(src: Path):
    import gguf

    pooling = _read_json(src / "1_Pooling" / "config.json")
    if not pooling or pooling.get("pooling_mode_mean_tokens"):
        return gguf.PoolingType.MEAN
    if pooling.get("pooling_mode_cls_token"):
        return gguf.PoolingType.CLS
    if pooling.get("pooling_mode_lasttoken"):
        return gguf.PoolingType.LAST
    raise InputError(f"unsupported pooling in {src / '1_Pooling' / 'config.json'}")


def _licence(src: Path) -> str | None:
    """The `license:` field of the model card's front matter, if any."""
    try:
        lines = (src / "README.md").read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    if not lines or lines[0].strip() != "---":
        return None
    for line in lines[1:]:
        if line.strip() == "---":
            break
        if line.startswith("license:"):
            return line.split(":", 1)[1].strip()
    return None


def _vocab(src: Path) -> tuple[list[str], list[int], set[str]]:
    """The WordPiece vocabulary in llama.cpp's phantom-space form, with token types."""
    import gguf

    try:
        words = (src / "vocab.txt").read_text(encoding="utf-8").split("\n")
    except OSError as exc:
        raise InputError(f"{src} has no readable vocab.txt: {exc}") from exc
    if words and words[-1] == "":
        words.pop()
    special: set[str] = set()
    for name in ("special_tokens_map.json", "tokenizer_config.json"):
        for key, value in _read_json(src / name).items():
            if key.endswith("_token") and isinstance(value, str):
                special.add(value)
            elif key.endswith("_token") and isinstance(value, dict):
                special.add(value.get("content", ""))
    for added in _read_json(src / "tokenizer.json").get("added_tokens", []):
        if added.get("special"):
            special.add(added["content"])

    tokens, types = [], []
    for word in words:
        if word in special:
            tokens.append(word)
            types.append(int(gguf.TokenType.CONTROL))
        elif word.startswith("##"):
            tokens.append(word[2:])
            types.append(int(gguf.TokenType.NORMAL))
        else:
            tokens.append("\u2581" + word)
            types.append(int(gguf.TokenType.NORMAL))
    return tokens, types, special


def _tensor_type(gguf_name: str, data: np.ndarray, out_type: str):
    """The storage type llama.cpp's converter picks for a tensor."""
    import gguf

    q = gguf.GGMLQuantizationType
    if (
        data.ndim <= 1
        or gguf_name.endswith("_norm.weight")
        or not gguf_name.endswith(".weight")
        or gguf_name.startswith(("position_embd", "token_types"))
        or out_type == "f32"
    ):
        return q.F32
    if out_type == "q8_0" and data.shape[-1] % 32 == 0:
        return q.Q8_0
    return q.F16


def convert(src: Path, out: Path, out_type: str = "f16", name: str | None = None) -> Path:
    """Convert the BERT model folder `src` to a GGUF file at `out`; returns `out`."""
    import gguf
    from safetensors.numpy import load_file

    src, out = Path(src), Path(out)
    if out_type not in OUT_TYPES:
        raise InputError(f"unknown output type {out_type!r}; choose one of {', '.join(OUT_TYPES)}")
    config = _read_json(src / "config.json")
    if not config:
        raise InputError(f"{src} has no config.json: not a Hugging Face model folder")
    if config.get("model_type") != "bert":
        raise InputError(
            f"{src} is a {config.get('model_type')!r} model; this converter handles BERT only "
            "(convert other models with llama.cpp's convert_hf_to_gguf.py)"
        )
    weights_path = src / "model.safetensors"
    if not weights_path.is_file():
        raise InputError(f"{src} has no model.safetensors")

    n_layers = int(config["num_hidden_layers"])
    name_map = gguf.get_tensor_name_map(gguf.MODEL_ARCH.BERT, n_layers)
    tokens, token_types, _ = _vocab(src)
    st_config = _read_json(src / "sentence_bert_config.json")
    modules = _read_json(src / "modules.json") or []
    normalize = any("Normalize" in str(m.get("type", "")) for m in modules)

    tmp = out.with_name(out.name + ".part")
    out.parent.mkdir(parents=True, exist_ok=True)
    writer = gguf.GGUFWriter(str(tmp), "bert")
    writer.add_name(name or src.name)
    if licence := _licence(src):
        writer.add_license(licence)
    writer.add_context_length(int(config["max_position_embeddings"]))
    writer.add_embedding_length(int(config["hidden_size"]))
    writer.add_feed_forward_length(int(config["intermediate_size"]))
    writer.add_block_count(n_layers)
    writer.add_head_count(int(config["num_attention_heads"]))
    writer.add_layer_norm_eps(float(config.get("layer_norm_eps", 1e-12)))
    writer.add_causal_attention(False)
    writer.add_pooling_type(_pooling_type(src))
    writer.add_file_type(
        {
            "f32": gguf.LlamaFileType.ALL_F32,
            "f16": gguf.LlamaFileType.MOSTLY_F16,
            "q8_0": gguf.LlamaFileType.MOSTLY_Q8_0,
        }[out_type]
    )
    writer.add_token_type_count(int(config.get("type_vocab_size", 1)))
    writer.add_tokenizer_model("bert")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types(token_types)
    # llama.cpp has no key for [CLS]: for `bert` vocabularies it uses BOS (101) as CLS.
    special_types = ("bos", "eos", "unk", "sep", "pad", "mask")
    gguf.SpecialVocab(src, n_vocab=len(tokens), special_token_types=special_types).add_to_gguf(
        writer, quiet=True
    )
    if st_config.get("max_seq_length"):
        writer.add_uint32(KEY_MAX_SEQ, int(st_config["max_seq_length"]))
    writer.add_bool(KEY_NORMALIZE, normalize)
    writer.add_string(KEY_SOURCE, "converted by mnemo model convert from " + src.name)

    weights = load_file(str(weights_path))
    for hf_name in sorted(weights):
        clean = hf_name.removeprefix("bert.")
        if clean == "embeddings.position_ids" or clean.startswith(("pooler.", "cls.")):
            continue
        gguf_name = name_map.get_name(clean, try_suffixes=(".weight", ".bias"))
        if gguf_name is None:
            raise InputError(f"unexpected tensor {hf_name!r} in {weights_path}")
        data = weights[hf_name].astype(np.float32)
        qtype = _tensor_type(gguf_name, data, out_type)
        if qtype == gguf.GGMLQuantizationType.F32:
            writer.add_tensor(gguf_name, data)
        elif qtype == gguf.GGMLQuantizationType.F16:
            writer.add_tensor(gguf_name, data.astype(np.float16))
        else:
            writer.add_tensor(gguf_name, gguf.quants.quantize(data, qtype), raw_dtype=qtype)

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    tmp.replace(out)
    return out
