"""A fully fine-tuned model as a small LoRA adapter: the truncated SVD of each projection's change.

Full fine-tuning teaches a 135M model more per update than LoRA does (docs/training.md), but its
result is a whole model (270 MB in bf16), not a file to commit. ``cad-train extract`` keeps the
part that matters: for every attention and MLP projection (``training.fit.TARGET_MODULES``)

    ΔW = W_tuned − W_base ≈ U_r S_r V_rᵀ = B A,   B = U_r √S_r,  A = √S_r V_rᵀ

(the best rank-r approximation, Eckart–Young), written as a peft LoRA adapter with ``lora_alpha = r``
(scale 1), so ``load_model("<base>+<adapter>")`` merges B A back into the base weights. The base is
the *untrained* one: the adapter replaces, not stacks on, any adapter the full run started from.

What a LoRA cannot hold (embeddings, norms) is left at the base's values; the report says how much
of each changed (relative Frobenius norm) and how much of each projection's change the rank keeps
(``energy``: Σ_{i≤r} s_i² / Σ s_i²), so the loss of fidelity is measured, not guessed; compare the
two with ``cad-train score``.
"""
from __future__ import annotations

import json
from pathlib import Path

import torch

from engine.backends.adapters import ADAPTER_WEIGHTS, PROFILE_FILE, read_profile
from training.fit import TARGET_MODULES


class ExtractError(ValueError):
    """The tuned model and the base do not fit together, or the rank is impossible."""


def low_rank_factors(delta: torch.Tensor, rank: int) -> tuple[torch.Tensor, torch.Tensor, float]:
    """(B, A, energy): ``B @ A`` is the best rank-``rank`` approximation of ``delta`` (out × in);
    ``energy`` is the share of its squared Frobenius norm that approximation keeps (1.0 for a zero delta).
    Factors narrower than ``rank`` (a small matrix) are padded with zeros."""
    u, s, vh = torch.linalg.svd(delta.double(), full_matrices=False)
    k = min(rank, s.numel())
    root = s[:k].sqrt()
    b = torch.zeros(delta.shape[0], rank, dtype=torch.float64)
    a = torch.zeros(rank, delta.shape[1], dtype=torch.float64)
    b[:, :k] = u[:, :k] * root
    a[:k] = root[:, None] * vh[:k]
    total = float((s * s).sum())
    energy = 1.0 if total == 0.0 else float((s[:k] * s[:k]).sum()) / total
    return b.float(), a.float(), energy


def untrained_base(spec: str) -> str:
    """The base a chain of full fine-tuning runs started from: a run continued from another run's
    directory records that directory as its base; its own profile names the one before it."""
    seen = set()
    while spec not in seen:
        seen.add(spec)
        path = Path(spec).expanduser()
        profile = read_profile(path) if path.is_dir() else {}
        if not profile.get("config", {}).get("full_finetune") or not profile.get("base"):
            return spec
        spec = profile["base"]
    raise ExtractError(f"the recorded bases of {spec} form a loop: pass the untrained base with --base")


def _projections(model) -> dict[str, torch.nn.Linear]:
    return {name: m for name, m in model.named_modules()
            if name.rsplit(".", 1)[-1] in TARGET_MODULES and isinstance(m, torch.nn.Linear)}


def _check_same_shape(tuned: dict, base: dict) -> None:
    missing = sorted(set(base) ^ set(tuned))
    if missing:
        raise ExtractError(f"the tuned model and the base differ in parameters ({missing[:3]}): "
                           f"pass the base the full fine-tuning started from (--base)")
    wrong = [k for k in base if base[k].shape != tuned[k].shape]
    if wrong:
        raise ExtractError(f"{wrong[0]} is {tuple(tuned[wrong[0]].shape)} in the tuned model but "
                           f"{tuple(base[wrong[0]].shape)} in the base: not the same architecture")


def extract_adapter(tuned_dir: str | Path, out: str | Path, *, rank: int, base: str = "",
                    log=lambda message: None) -> dict:
    """Write the rank-``rank`` adapter of ``tuned_dir`` (a fully fine-tuned HF directory) to ``out``;
    returns the report (also stored in the adapter's ``cad_profile.json`` under ``extracted``)."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from engine.backends.adapters import quiet_peft
    from engine.backends.model import load_model
    from training.loop import staged_dir, weights_to_fp16

    tuned_dir, out = Path(tuned_dir).expanduser(), Path(out).expanduser()
    if rank < 1:
        raise ExtractError(f"--rank must be at least 1, not {rank}")
    if not (tuned_dir / "config.json").is_file():
        raise ExtractError(f"{tuned_dir} is not a Hugging Face model directory (no config.json): pass the "
                           f"adapter/ folder a `cad-train fit --full-finetune` run exported")
    profile = read_profile(tuned_dir)
    base = base or untrained_base(profile.get("base") or "default")
    log(f"loading the base {base!r} (untrained) and the tuned model {tuned_dir}")
    base_model = load_model(base, "cpu", adapter="none").model.float()
    tuned = AutoModelForCausalLM.from_pretrained(str(tuned_dir), dtype=torch.float32)
    base_params = dict(base_model.named_parameters())
    tuned_params = dict(tuned.named_parameters())
    _check_same_shape(tuned_params, base_params)

    factors, energies = {}, {}
    for name, module in _projections(base_model).items():
        delta = tuned_params[name + ".weight"].detach() - module.weight.detach()
        b, a, energies[name] = low_rank_factors(delta, rank)
        factors[name] = (b, a)
    covered = {name + ".weight" for name in factors}
    left_out = {}
    for name, w in base_params.items():
        if name in covered:
            continue
        change = float((tuned_params[name].detach() - w.detach()).norm() / w.detach().norm().clamp_min(1e-12))
        if change > 0.0:
            left_out[name] = change
    log(f"{len(factors)} projections factored at rank {rank}; {len(left_out)} other tensors changed "
        f"(kept at the base's values)")

    lora = LoraConfig(r=rank, lora_alpha=rank, lora_dropout=0.0, bias="none",
                      target_modules=list(TARGET_MODULES), task_type="CAUSAL_LM")
    with quiet_peft():
        wrapped = get_peft_model(base_model, lora)
    with torch.no_grad():
        for name, module in wrapped.base_model.model.named_modules():
            if name in factors:
                b, a = factors[name]
                module.lora_B["default"].weight.copy_(b)
                module.lora_A["default"].weight.copy_(a)
    report = _report(rank, energies, left_out)
    with staged_dir(out) as tmp:
        wrapped.save_pretrained(str(tmp))
        weights_to_fp16(tmp / ADAPTER_WEIGHTS)
        report["bytes"] = (tmp / ADAPTER_WEIGHTS).stat().st_size
        record = {"prompt_profile": profile.get("prompt_profile", "short"), "base": base,
                  "extracted": {"from": str(tuned_dir), **report}, "training": profile.get("training", {})}
        (tmp / PROFILE_FILE).write_text(json.dumps(record, indent=2) + "\n")
    return report


def _report(rank: int, energies: dict[str, float], left_out: dict[str, float]) -> dict:
    """Energy kept per projection kind (mean and minimum over layers) and the largest left-out changes."""
    by_kind: dict[str, list[float]] = {}
    for name, e in energies.items():
        by_kind.setdefault(name.rsplit(".", 1)[-1], []).append(e)
    kinds = {k: {"mean": round(sum(v) / len(v), 4), "min": round(min(v), 4)} for k, v in sorted(by_kind.items())}
    largest = dict(sorted(left_out.items(), key=lambda kv: -kv[1])[:5])
    return {"rank": rank, "energy": kinds,
            "energy_mean": round(sum(energies.values()) / max(1, len(energies)), 4),
            "left_out_relative_change": {k: round(v, 5) for k, v in largest.items()}}
