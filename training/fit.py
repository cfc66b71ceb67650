"""The pieces of LoRA fine-tuning: configuration, the per-case loss, the trainable model, the schedule.

The loop itself (``training.loop``) makes one optimizer update per ``accum`` cases:

* each case is rendered by ``training.render`` (the decoder's own prompt and token spelling);
* ``gradient="program"`` (default): the sequence is fed in segments through a KV cache; positions
  that predict a trained token are computed with gradient, the rest (the prompt, spliced copy
  payloads) without, their keys/values entering the cache as constants. The forward is exact —
  the same logits as one full forward —; the gradient leaves out the paths through the untrained
  positions, which makes a step 2–3× cheaper on CPU. ``gradient="full"`` backpropagates everywhere;
* AdamW, linear warm-up then cosine decay to 10%, gradient clipping at 1.0;
* a checkpoint (adapter, optimizer, scheduler, data position, RNG) is written atomically every
  ``checkpoint_minutes`` and at the end; a killed run started again with the same ``out`` resumes
  exactly where the last checkpoint was taken;
* ``out/metrics.jsonl`` gets a line per update (loss, tokens, seconds) and per validation pass;
* the final adapter (peft format + ``cad_profile.json``) is exported to ``out/adapter``, which
  ``engine.model.load_model`` accepts as a model spec.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

import torch

TARGET_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


@dataclass
class FitConfig:
    data: str                          # directory with train.jsonl / val.jsonl (cad-train data)
    out: str
    base: str = "default"              # model spec of the base (adapter off)
    profile: str = "short"
    rank: int = 16
    alpha: int = 32
    lr: float = 2e-4
    epochs: float = 1.0
    accum: int = 4
    warmup: int = 30
    gradient: str = "program"          # "program" | "full"
    full_finetune: bool = False        # train every weight instead of a LoRA adapter
    threads: int = 0                   # 0: torch's default
    device: str = "auto"
    seed: int = 0
    max_cases: int = 0                 # 0: all of train.jsonl
    val_cases: int = 24
    val_every: int = 100               # updates
    checkpoint_minutes: float = 5.0
    max_updates: int = 0               # 0: as many as epochs give
    extra: dict = field(default_factory=dict)


# ---------------------------------------------------------------------------------------- loss


def _grad_keeping_cache():
    """A DynamicCache whose concatenations keep the autograd history even inside no_grad segments."""
    from transformers.cache_utils import DynamicCache, DynamicLayer

    class GradKeepingLayer(DynamicLayer):
        def update(self, *args, **kwargs):
            with torch.enable_grad():
                return super().update(*args, **kwargs)

    cache = DynamicCache()
    cache.layer_class_to_replicate = GradKeepingLayer
    return cache


def _segments(flags: list[bool]) -> list[tuple[int, int, bool]]:
    out, start = [], 0
    for i in range(1, len(flags) + 1):
        if i == len(flags) or flags[i] != flags[start]:
            out.append((start, i, flags[start]))
            start = i
    return out


def case_loss(causal_lm, ids: list[int], loss_mask: list[bool], gradient: str = "program") -> tuple[torch.Tensor, int]:
    """Mean cross-entropy over the trained tokens of one rendered case; returns (loss, n_tokens).

    ``causal_lm`` is a HF causal LM (``.model`` the decoder stack, ``.lm_head`` the head).
    """
    device = next(causal_lm.parameters()).device
    predicts = loss_mask[1:]                       # position p predicts ids[p + 1]
    n_targets = sum(predicts)
    if n_targets == 0:
        raise ValueError("case has no trained tokens")
    x = torch.tensor([ids[:-1]], dtype=torch.long, device=device)
    y = torch.tensor(ids[1:], dtype=torch.long, device=device)
    stack, head = causal_lm.model, causal_lm.lm_head
    if gradient == "full":
        hidden = stack(input_ids=x).last_hidden_state[0]
        sel = torch.tensor(predicts, device=device)
        logits = head(hidden[sel]).float()
        return torch.nn.functional.cross_entropy(logits, y[sel], reduction="mean"), n_targets
    if gradient != "program":
        raise ValueError(f"gradient must be 'program' or 'full', got {gradient!r}")
    cache = _grad_keeping_cache()
    total = None
    for a, b, grad in _segments(predicts):
        with torch.set_grad_enabled(grad):
            hidden = stack(input_ids=x[:, a:b], past_key_values=cache, use_cache=True).last_hidden_state[0]
        if grad:
            logits = head(hidden).float()
            part = torch.nn.functional.cross_entropy(logits, y[a:b], reduction="sum")
            total = part if total is None else total + part
    return total / n_targets, n_targets


# ---------------------------------------------------------------------------------------- model


def build_trainable(config: FitConfig):
    """(loaded base model, trainable module) — a peft LoRA wrapper, or the model itself for full FT."""
    from engine.model import load_model

    loaded = load_model(config.base, config.device, adapter="none")
    model = loaded.model
    if config.full_finetune:
        model.train()
        return loaded, model
    from peft import LoraConfig, get_peft_model

    lora = LoraConfig(r=config.rank, lora_alpha=config.alpha, lora_dropout=0.0, bias="none",
                      target_modules=list(TARGET_MODULES), task_type="CAUSAL_LM")
    torch.manual_seed(config.seed)
    peft_model = get_peft_model(model, lora)
    peft_model.train()
    return loaded, peft_model


def causal_lm_of(trainable):
    """The HF causal LM inside a peft wrapper (or the model itself)."""
    base = getattr(trainable, "base_model", None)
    return getattr(base, "model", trainable) if base is not None and base is not trainable else trainable


def trainable_state(trainable) -> dict[str, torch.Tensor]:
    return {k: v.detach().cpu().clone() for k, v in trainable.named_parameters() if v.requires_grad}


def load_trainable_state(trainable, state: dict[str, torch.Tensor]) -> None:
    params = dict(trainable.named_parameters())
    missing = [k for k in state if k not in params]
    if missing:
        raise ValueError(f"checkpoint has parameters this model lacks: {missing[:3]}")
    with torch.no_grad():
        for k, v in state.items():
            params[k].copy_(v.to(params[k].device))


# ---------------------------------------------------------------------------------------- schedule


def lr_factor(update: int, total: int, warmup: int) -> float:
    if update < warmup:
        return (update + 1) / max(1, warmup)
    progress = (update - warmup) / max(1, total - warmup)
    return 0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))


def plan(n_cases: int, config: FitConfig, seed: int) -> list[int]:
    """The order of case indices over all epochs (deterministic)."""
    rng = random.Random(seed)
    order: list[int] = []
    whole = int(config.epochs)
    for _ in range(whole):
        perm = list(range(n_cases))
        rng.shuffle(perm)
        order.extend(perm)
    frac = config.epochs - whole
    if frac > 0:
        perm = list(range(n_cases))
        rng.shuffle(perm)
        order.extend(perm[: int(round(frac * n_cases))])
    return order
