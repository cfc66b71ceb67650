"""The in-process weights as a GGUF file for llama.cpp's server (f32 by default: the in-process dtype).

``merged_gguf(spec="default", dtype="f32")`` writes ``<merged dir>/model-<dtype>.gguf``
(``engine.remote.export.merged_model_dir``) with the ``gguf`` package: every metadata key of the
base GGUF the spec was dequantized from (architecture, hyper-parameters, the tokenizer and its
chat template) except the file type, and every tensor taken from the MERGED model (adapter
included) in llama.cpp's naming and layout (Q and K rows permuted back to llama.cpp's rotary
order, the inverse of what transformers does when it reads a llama GGUF). Only llama-architecture
bases that came from a GGUF (the default) are supported; for others use llama.cpp's
``convert_hf_to_gguf.py`` on the merged directory. Written to a temporary name and renamed.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from engine.errors import ModelLoadError

_SKIP_KEYS = ("GGUF.", "general.file_type", "general.quantization_version")
_LAYER = {
    "attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm",
    "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}


def _permute(w, n_head: int):
    """llama.cpp's rotary row order from HF's (convert_hf_to_gguf's ``permute``)."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def hf_name(gguf_name: str) -> str:
    """The HF state-dict name of a llama GGUF tensor name."""
    fixed = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight",
             "output.weight": "lm_head.weight"}
    if gguf_name in fixed:
        return fixed[gguf_name]
    _, layer, kind, suffix = gguf_name.split(".")
    return f"model.layers.{layer}.{_LAYER[kind]}.{suffix}"


def _copy_metadata(reader, writer) -> None:
    import gguf

    for name, f in reader.fields.items():
        if name.startswith(_SKIP_KEYS) or name == "general.architecture":
            continue
        vtype = f.types[0]
        value = f.contents()
        if vtype == gguf.GGUFValueType.ARRAY:
            writer.add_key_value(name, value, vtype, sub_type=f.types[-1])
        else:
            writer.add_key_value(name, value, vtype)


def merged_gguf(spec: str = "default", *, dtype: str = "f32",
                progress: Callable[[str], None] | None = None) -> Path:
    """The merged weights of ``spec`` as a GGUF (built once, cached next to the merged HF dir)."""
    import gguf
    import numpy as np
    from safetensors.numpy import load_file

    from engine.backends.model import _resolve
    from engine.remote.export import merged_key, merged_model_dir

    if dtype not in ("f32", "f16"):
        raise ValueError(f"dtype must be 'f32' or 'f16', got {dtype!r}")
    _, choice = merged_key(spec)
    source = _resolve(choice.base)
    if source.kind != "gguf":
        raise ModelLoadError(f"{spec!r}: only GGUF-based models can be exported by the project; convert "
                             f"{merged_model_dir(spec)} with llama.cpp's convert_hf_to_gguf.py instead")
    out_dir = merged_model_dir(spec, progress=progress)
    target = out_dir / f"model-{dtype}.gguf"
    if target.is_file():
        return target
    reader = gguf.GGUFReader(str(source.path))
    arch = reader.fields["general.architecture"].contents()
    if arch != "llama":
        raise ModelLoadError(f"{source.path}: architecture {arch!r} is not supported by the GGUF export (llama only)")
    n_head = int(reader.fields["llama.attention.head_count"].contents())
    n_kv = int(reader.fields["llama.attention.head_count_kv"].contents())
    state = {}
    for f in sorted(out_dir.glob("*.safetensors")):
        state.update(load_file(str(f)))
    if progress is not None:
        progress(f"writing {target.name} ({dtype}) ...")
    np_dtype = np.float32 if dtype == "f32" else np.float16
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    writer = gguf.GGUFWriter(str(tmp), arch)
    try:
        _copy_metadata(reader, writer)
        writer.add_file_type(gguf.LlamaFileType.ALL_F32 if dtype == "f32" else gguf.LlamaFileType.MOSTLY_F16)
        for t in reader.tensors:
            name = hf_name(t.name)
            if name not in state and name == "lm_head.weight":
                name = "model.embed_tokens.weight"   # tied embeddings
            w = state[name]
            if t.name.endswith("attn_q.weight"):
                w = _permute(w, n_head)
            elif t.name.endswith("attn_k.weight"):
                w = _permute(w, n_kv)
            # norms stay f32 (llama.cpp's convention); matrices take the requested dtype
            writer.add_tensor(t.name, np.ascontiguousarray(w.astype(np.float32 if w.ndim == 1 else np_dtype)))
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        tmp.rename(target)
    except BaseException:
        writer.close()
        tmp.unlink(missing_ok=True)
        raise
    return target
