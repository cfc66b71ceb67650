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
  ``engine.backends.model.load_model`` accepts as a model spec.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from pathlib import Path

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
    batch_tokens: int = 0              # > 0: padded batches of up to this many tokens (GPU); 0: accum cases
    time_budget_minutes: float = 0.0   # > 0: shorten the schedule if the measured pace would overrun it
    init_adapter: str = ""             # start from this adapter's LoRA weights (continue an earlier run)
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


def batch_loss(causal_lm, cases: list, autocast_dtype=None, count_hits: bool = False):
    """Token-weighted cross-entropy of several rendered cases in one padded forward (full gradient).

    Right padding needs no attention mask: under the causal mask a real position only attends to
    earlier positions, which are all real, so its logits are exactly those of its own unpadded
    sequence (and attention stays on the fused causal kernels, never an L x L mask). Only positions
    whose next token is trained reach the head. Returns
    (loss, n_trained_tokens), plus the number of argmax hits with ``count_hits``.
    """
    device = next(causal_lm.parameters()).device
    width = max(len(rc.ids) for rc in cases) - 1
    x = torch.zeros((len(cases), width), dtype=torch.long)
    y = torch.full((len(cases), width), -100, dtype=torch.long)
    for row, rc in enumerate(cases):
        n = len(rc.ids) - 1
        x[row, :n] = torch.tensor(rc.ids[:-1])
        y[row, :n] = torch.tensor([t if m else -100 for t, m in zip(rc.ids[1:], rc.loss_mask[1:])])
    x, y = x.to(device), y.to(device)
    with torch.autocast(device.type, dtype=autocast_dtype, enabled=autocast_dtype is not None):
        hidden = causal_lm.model(input_ids=x).last_hidden_state
        sel = y != -100
        logits = causal_lm.lm_head(hidden[sel]).float()
    n_targets = int(sel.sum())
    loss = torch.nn.functional.cross_entropy(logits, y[sel], reduction="mean")
    if count_hits:  # how many trained tokens are the argmax (validation)
        return loss, n_targets, int((logits.argmax(-1) == y[sel]).sum())
    return loss, n_targets


# ---------------------------------------------------------------------------------------- model


def build_trainable(config: FitConfig):
    """(loaded base model, trainable module) — a peft LoRA wrapper, or the model itself for full FT."""
    from engine.backends.model import load_model

    # Full fine-tuning from an adapter starts from the base with that adapter merged into its weights.
    start = config.init_adapter if config.full_finetune and config.init_adapter else "none"
    loaded = load_model(config.base, config.device, adapter=start)
    model = loaded.model.float()       # fp32 master weights; CUDA forwards run under bf16 autocast
    if config.full_finetune:
        model.requires_grad_(True)     # a merged adapter leaves the base weights frozen (peft froze them)
        model.train()
        return loaded, model
    from peft import LoraConfig, get_peft_model

    from engine.backends.adapters import ADAPTER_WEIGHTS, quiet_peft

    lora = LoraConfig(r=config.rank, lora_alpha=config.alpha, lora_dropout=0.0, bias="none",
                      target_modules=list(TARGET_MODULES), task_type="CAUSAL_LM")
    torch.manual_seed(config.seed)
    with quiet_peft():
        peft_model = get_peft_model(model, lora)
    if config.init_adapter:
        from peft import set_peft_model_state_dict
        from safetensors.torch import load_file

        weights = load_file(str(Path(config.init_adapter) / ADAPTER_WEIGHTS))
        result = set_peft_model_state_dict(peft_model, {k: v.float() for k, v in weights.items()})
        if getattr(result, "unexpected_keys", None):
            raise ValueError(f"{config.init_adapter} does not fit rank {config.rank}: {result.unexpected_keys[:2]}")
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


def plan_batches(lengths: list[int], config: FitConfig, seed: int) -> list[list[int]]:
    """The updates of the whole run, each a list of case indices (deterministic).

    ``batch_tokens == 0``: ``accum`` consecutive cases of ``plan``'s order per update. Otherwise the
    order is cut into windows of 256 cases, each window sorted by length and packed greedily into
    batches whose padded size (cases x longest) stays within ``batch_tokens``; the batches are then
    shuffled, so an update never mixes a long document with many short ones and padding stays small.
    """
    order = plan(len(lengths), config, seed)
    if config.batch_tokens <= 0:
        return [order[i:i + config.accum] for i in range(0, len(order), config.accum)]
    batches: list[list[int]] = []
    for w in range(0, len(order), 256):
        window = sorted(order[w:w + 256], key=lambda i: lengths[i])
        current: list[int] = []
        for idx in window:
            longest = max([lengths[i] for i in current] + [lengths[idx]])
            if current and longest * (len(current) + 1) > config.batch_tokens:
                batches.append(current)
                current = []
            current.append(idx)
        if current:
            batches.append(current)
    random.Random(f"{seed}:batches").shuffle(batches)
    return batches


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
