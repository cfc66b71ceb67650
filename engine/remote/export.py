"""The in-process weights as files a serving engine loads: an HF directory with the adapter merged.

``merged_model_dir(spec="default")`` loads the spec exactly as the in-process engine does
(``engine.backends.model.load_model``: the dequantized base plus the shipped LoRA adapter, merged),
and writes the merged weights (fp32 safetensors), config, tokenizer and ``cad_profile.json`` (the
prompt profile) under ``<cache root>/merged/<name>-<key>``. The key hashes the base cache entry,
the adapter files and the transformers version; the entry is built in a temporary directory and
renamed into place, so a killed export never leaves a half-written entry. vLLM serves this
directory (``make serve``); ``engine.remote.gguf_export`` turns it into a GGUF for llama.cpp.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from pathlib import Path
from typing import Callable

MARKER = "cad-merged.json"


def _adapter_key(adapter: Path | None) -> str:
    if adapter is None:
        return "none"
    h = hashlib.sha256()
    for f in sorted(adapter.iterdir()):
        if f.is_file():
            h.update(f.name.encode())
            h.update(hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()[:16]


def merged_key(spec: str = "default") -> tuple[str, object]:
    """(entry name, ModelChoice) for a spec: changes when the base, the adapter or transformers change."""
    import transformers

    from engine.backends.adapters import choose
    from engine.backends.model import _resolve, cache_entry_dir

    choice = choose(spec)
    source = _resolve(choice.base)
    base_id = cache_entry_dir(source.path).name if source.kind == "gguf" else str(source.path.resolve())
    key = hashlib.sha256(f"{base_id}|{_adapter_key(choice.adapter)}|{transformers.__version__}".encode())
    stem = (choice.adapter.name if choice.adapter is not None else Path(choice.base).name or "model")
    return f"{stem}-{key.hexdigest()[:16]}", choice


def merged_model_dir(spec: str = "default", *, progress: Callable[[str], None] | None = None) -> Path:
    """The merged HF directory of ``spec`` (built once, cached; see module doc)."""
    from engine.backends.model import cache_root, load_model

    name, choice = merged_key(spec)
    entry = cache_root() / "merged" / name
    if (entry / MARKER).is_file():
        return entry
    if progress is not None:
        progress(f"exporting the merged weights of {spec!r} to {entry} (first use only) ...")
    loaded = load_model(spec, "cpu", progress=progress)
    entry.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}.tmp-", dir=entry.parent))
    try:
        loaded.model.save_pretrained(str(tmp), safe_serialization=True)
        loaded.tokenizer.save_pretrained(str(tmp))
        (tmp / "cad_profile.json").write_text(json.dumps({"prompt_profile": loaded.prompt_profile, "spec": spec}))
        (tmp / MARKER).write_text(json.dumps({"spec": spec, "adapter": str(choice.adapter), "base": choice.base}))
        try:
            tmp.rename(entry)
        except OSError:
            if not (entry / MARKER).is_file():
                raise
            shutil.rmtree(tmp, ignore_errors=True)   # another process published it first
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return entry
