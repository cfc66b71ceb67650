"""The training loop: ``fit(config)`` — resumable checkpoints, metrics, progress, adapter export.

Layout of ``config.out``::

    checkpoint/          state.json (position, update, RNG, config), trainable.safetensors, optimizer.pt
    metrics.jsonl        one JSON line per update ({"update", "loss", "tokens", "seconds", "lr"}) and per
                         validation pass ({"update", "val_loss", "val_exact"})
    adapter/             the exported adapter (peft format) + cad_profile.json — a model spec

A checkpoint is written to ``checkpoint.tmp`` and renamed into place, so a run killed at any moment
leaves either the previous checkpoint or the new one. Starting ``fit`` again with the same ``out``
resumes from it: same order of cases, same optimizer state, same RNG.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import time
from dataclasses import asdict
from pathlib import Path

import torch

from engine.backends.adapters import ADAPTER_WEIGHTS, PROFILE_FILE
from training.fit import (FitConfig, batch_loss, build_trainable, case_loss, causal_lm_of, load_trainable_state,
                          lr_factor, plan_batches, trainable_state)


def render_all(path: Path, tokenizer, profile: str, limit: int = 0) -> list:
    from training.dataset import load_cases
    from training.render import render_case

    cases = load_cases(path)
    if limit:
        cases = cases[:limit]
    workers = min(16, (os.cpu_count() or 1))
    if len(cases) < 400 or workers < 4:
        return [render_case(c, tokenizer, profile) for c in cases]
    # many cases on a many-core machine (a GPU host): render in forked workers, order kept
    import multiprocessing
    from functools import partial

    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        return pool.map(partial(render_case, tokenizer=tokenizer, profile=profile), cases, chunksize=64)


def _save_checkpoint(out: Path, trainable, optimizer, state: dict) -> None:
    from safetensors.torch import save_file

    tmp, final = out / "checkpoint.tmp", out / "checkpoint"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    save_file(trainable_state(trainable), str(tmp / "trainable.safetensors"))
    torch.save(optimizer.state_dict(), tmp / "optimizer.pt")
    (tmp / "state.json").write_text(json.dumps(state, indent=2))
    old = out / "checkpoint.old"
    shutil.rmtree(old, ignore_errors=True)
    if final.exists():
        os.rename(final, old)
    os.rename(tmp, final)
    shutil.rmtree(old, ignore_errors=True)


def _load_checkpoint(out: Path, trainable, optimizer) -> dict | None:
    from safetensors.torch import load_file

    final = out / "checkpoint"
    if not (final / "state.json").is_file():
        old = out / "checkpoint.old"  # killed between the two renames
        if (old / "state.json").is_file():
            os.rename(old, final)
        else:
            return None
    load_trainable_state(trainable, load_file(str(final / "trainable.safetensors")))
    optimizer.load_state_dict(torch.load(final / "optimizer.pt", weights_only=True))
    return json.loads((final / "state.json").read_text())


def export_adapter(trainable, out_dir: Path, config: FitConfig, summary: dict, tokenizer=None) -> Path:
    """Write the adapter (peft ``save_pretrained``) and its prompt profile; returns the directory.
    Full fine-tuning writes the whole model with its tokenizer: a Hugging Face directory any model spec
    takes (``cad-train extract`` turns it into an adapter)."""
    with staged_dir(out_dir) as tmp:
        if config.full_finetune:
            trainable.save_pretrained(str(tmp), safe_serialization=True)
            if tokenizer is not None:
                tokenizer.save_pretrained(str(tmp))
        else:
            trainable.save_pretrained(str(tmp))
            weights_to_fp16(tmp / ADAPTER_WEIGHTS)
        profile = {"prompt_profile": config.profile, "base": config.base, "training": summary,
                   "config": asdict(config)}
        (tmp / PROFILE_FILE).write_text(json.dumps(profile, indent=2) + "\n")
    return out_dir


@contextlib.contextmanager
def staged_dir(out_dir: Path):
    """Yield a fresh sibling path to write a directory into; on success it replaces ``out_dir``, so a
    killed export never leaves a half-written adapter where a model spec points."""
    tmp = out_dir.with_name(out_dir.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    yield tmp
    shutil.rmtree(out_dir, ignore_errors=True)
    os.rename(tmp, out_dir)


def weights_to_fp16(path: Path) -> None:
    """LoRA factors in fp16: half the size on disk, and far below the precision that matters once the
    delta is merged into the base weights at load."""
    from safetensors.torch import load_file, save_file

    tensors = {k: v.to(torch.float16) if v.is_floating_point() else v for k, v in load_file(str(path)).items()}
    save_file(tensors, str(path), metadata={"format": "pt"})


def teacher_forced_scores(lm, cases, autocast=None) -> dict:
    """Token-weighted loss over the validation cases, and ``exact``: the share of cases whose every
    trained token is the model's argmax under teacher forcing. Such a case is decoded exactly by the
    greedy, grammar-constrained decoder (the gold token is always legal, so the mask cannot change
    an argmax that is already gold): a lower bound on free-run exact match, in one forward a case."""
    total, n, exact = 0.0, 0, 0
    with torch.no_grad():
        for rc in cases:
            loss, k, hits = batch_loss(lm, [rc], autocast, count_hits=True)
            total += float(loss) * k
            n += k
            exact += int(hits == k)
    return {"val_loss": round(total / max(1, n), 5), "val_exact": round(exact / max(1, len(cases)), 4)}


def _fit_time_budget(config: FitConfig, state: dict, total: int, log) -> int:
    """With ``time_budget_minutes``, shorten the run (once, after 20 updates) to what the measured
    pace allows; the cosine schedule then decays over the shortened run. A run that still overruns the
    budget by a fifth (the pace changed) stops at once and exports what it has. Returns the new total."""
    if config.time_budget_minutes <= 0:
        return total
    if state["seconds"] > config.time_budget_minutes * 60 * 1.2:
        log(f"time budget {config.time_budget_minutes} min overrun: stopping at update {state['update']}")
        return state["update"]
    if state["update"] != 20 or state.get("budgeted"):
        return total
    state["budgeted"] = True
    pace = state["seconds"] / state["update"]
    affordable = int(config.time_budget_minutes * 60 / pace)
    if affordable >= total:
        return total
    log(f"time budget {config.time_budget_minutes} min at {pace:.2f} s/update: {affordable} of {total} updates")
    return max(state["update"] + 1, affordable)


def _resumed_total(config: FitConfig, state: dict, planned: int, log) -> int:
    """The run's length: a checkpoint keeps its own (the time budget may have shortened it), unless the
    command names a different ``max_updates`` than the run was started with: then that (at least one
    update more than done), and the cosine schedule decays over the new length from here on."""
    started_with = state.get("config", {}).get("max_updates", config.max_updates)   # the checkpoint's command
    kept = state.get("total_updates", planned)
    if not state["update"] or config.max_updates == started_with:
        return kept
    state["budgeted"] = True   # an explicit length: no time-budget cut
    total = max(state["update"] + 1, planned)
    log(f"--max-updates {config.max_updates}: the run's length changes from {kept} to {total} updates")
    return total


def fit(config: FitConfig, *, log=print) -> Path:
    """Train (or resume) and export the adapter; returns the adapter directory."""
    if config.threads:
        torch.set_num_threads(config.threads)
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    loaded, trainable = build_trainable(config)
    lm = causal_lm_of(trainable)
    data = Path(config.data)
    train = render_all(data / "train.jsonl", loaded.tokenizer, config.profile, config.max_cases)
    val = render_all(data / "val.jsonl", loaded.tokenizer, config.profile, config.val_cases) \
        if (data / "val.jsonl").is_file() and config.val_cases else []
    batches = plan_batches([len(rc.ids) for rc in train], config, config.seed)
    total_updates = len(batches)
    if config.max_updates:
        total_updates = min(total_updates, config.max_updates)
    params = [p for p in trainable.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=config.lr, weight_decay=0.0)
    state = _load_checkpoint(out, trainable, optimizer) or {"update": 0, "position": 0, "seconds": 0.0}
    total_updates = _resumed_total(config, state, total_updates, log)
    if state["update"]:
        log(f"resuming from update {state['update']}/{total_updates} (case {state['position']})")
    device = next(lm.parameters()).device
    autocast = torch.bfloat16 if device.type == "cuda" else None
    log(f"{len(train)} cases, {total_updates} updates, device {device}, "
        f"{sum(p.numel() for p in params) / 1e6:.2f}M trainable parameters")
    metrics = open(out / "metrics.jsonl", "a", encoding="utf-8")
    last_ckpt = time.monotonic()
    bar = _progress(total_updates, state["update"])
    try:
        while state["update"] < total_updates:
            t0 = time.perf_counter()
            lr = config.lr * lr_factor(state["update"], total_updates, config.warmup)
            for group in optimizer.param_groups:
                group["lr"] = lr
            batch = batches[state["update"]]
            loss_sum, tokens = 0.0, sum(len(train[i].ids) for i in batch)
            if config.batch_tokens > 0:
                loss, _ = batch_loss(lm, [train[i] for i in batch], autocast)
                loss.backward()
                loss_sum = float(loss.detach()) * len(batch)
            else:
                for idx in batch:
                    rc = train[idx]
                    loss, k = case_loss(lm, rc.ids, rc.loss_mask, config.gradient)
                    (loss / len(batch)).backward()
                    loss_sum += float(loss.detach())
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            state["update"] += 1
            state["position"] += len(batch)
            dt = time.perf_counter() - t0
            state["seconds"] += dt
            row = {"update": state["update"], "loss": round(loss_sum / len(batch), 5), "tokens": tokens,
                   "seconds": round(dt, 3), "lr": lr}
            metrics.write(json.dumps(row) + "\n")
            metrics.flush()
            bar.update(1, row)
            total_updates = _fit_time_budget(config, state, total_updates, log)
            state["total_updates"] = total_updates
            bar.total = total_updates
            if val and (state["update"] % config.val_every == 0 or state["update"] == total_updates):
                v = teacher_forced_scores(lm, val, autocast)
                metrics.write(json.dumps({"update": state["update"], **v}) + "\n")
                metrics.flush()
                log(f"update {state['update']}: val_loss {v['val_loss']:.4f}, val_exact {v['val_exact']:.3f}")
            if time.monotonic() - last_ckpt > config.checkpoint_minutes * 60 or state["update"] == total_updates:
                _save_checkpoint(out, trainable, optimizer, {**state, "config": asdict(config)})
                last_ckpt = time.monotonic()
    finally:
        metrics.close()
        bar.close()
    summary = {"updates": state["update"], "cases_seen": state["position"], "train_cases": len(train),
               "train_seconds": round(state["seconds"], 1)}
    return export_adapter(trainable, out / "adapter", config, summary, loaded.tokenizer)


class _progress:
    """A tqdm bar on a terminal; a plain line every 10 updates otherwise (logs stay readable)."""

    def __init__(self, total: int, initial: int):
        self.total, self.n = total, initial
        self.tty = sys.stderr.isatty()
        self.t0 = time.monotonic()
        self.start = initial
        if self.tty:
            from tqdm import tqdm

            self.bar = tqdm(total=total, initial=initial, unit="upd", dynamic_ncols=True)

    def update(self, k: int, row: dict) -> None:
        self.n += k
        if self.tty:
            self.bar.set_postfix(loss=row["loss"], s=row["seconds"])
            self.bar.update(k)
        elif self.n % 10 == 0 or self.n == self.total:
            rate = (time.monotonic() - self.t0) / max(1, self.n - self.start)
            eta = rate * (self.total - self.n) / 60
            print(f"[cad-train] update {self.n}/{self.total} loss {row['loss']:.4f} "
                  f"{rate:.1f} s/update, ETA {eta:.0f} min", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.tty:
            self.bar.close()
