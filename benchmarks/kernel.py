"""Kernel microbenchmark: per-span speedup s(N) of parallel prefill, fixed per-op costs, and m*.

Seed Table 11 / Appendix H / Appendix J. After a random-context prefix (default 1024 tokens) in a
DynamicCache, for each span length N:

* T_AR(N): N successive forwards of one token each, appending to the cache;
* T_PP(N): one forward over N tokens on the same prefix;

both with `logits_to_keep=1` (a copy splice only needs the last position's logits), the cache
cropped back to the prefix after every trial, median of `--trials` after `--warmup` untimed runs,
`torch.cuda.synchronize()` bookends on CUDA. s(N) = T_AR(N) / T_PP(N); τ = T_AR(1).

Fixed costs (median over many repetitions):
* c_mask: masked argmax as the FSM does it (index_select of the allowed ids, argmax, map back) minus a
  plain argmax over the full vocabulary;
* c_sync: the CPU-side work per op: two `.item()` converts, four small `tokenizer.decode` calls and a
  substring check;
* c_forced: one forward over a 4-token forced literal (absolute), and its excess over a 1-token forward.

m* = min{N : s(N) > 1 + c/(N·τ)} with c = c_mask + c_sync, and the safe variant s(N) > 1.5.

Run: `python -m benchmarks.kernel --json results/kernel_cpu.json` (default model, CPU fp32 unless CUDA)
or `--quick` for a smoke run. GPU-only: `--model-config qwen2.5-7b --random-weights --dtype bf16`
(random init from Qwen2.5-7B's shape; kernel speed does not depend on the weights); without CUDA it
prints why it is skipped and exits 0.
"""
from __future__ import annotations

import statistics
import sys
import time
from typing import Callable

from benchmarks.common import bench_argparser, write_report

FULL_NS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
QUICK_NS = (1, 4, 16)

# Shapes of known models for random-weight kernel runs (HF config field names).
MODEL_CONFIGS = {
    "qwen2.5-7b": dict(
        model_type="qwen2", hidden_size=3584, num_hidden_layers=28, num_attention_heads=28,
        num_key_value_heads=4, intermediate_size=18944, vocab_size=152064,
        max_position_embeddings=32768, rope_theta=1_000_000.0, rms_norm_eps=1e-6, tie_word_embeddings=False,
    ),
    "qwen2.5-1.5b": dict(
        model_type="qwen2", hidden_size=1536, num_hidden_layers=28, num_attention_heads=12,
        num_key_value_heads=2, intermediate_size=8960, vocab_size=151936,
        max_position_embeddings=32768, rope_theta=1_000_000.0, rms_norm_eps=1e-6, tie_word_embeddings=True,
    ),
}


class KernelSkipped(Exception):
    """This configuration cannot run here (e.g. a GPU-only config on a CPU machine)."""


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- setup


def build_model(args):
    """(model, tokenizer_or_None, device, dtype, description) for the requested configuration."""
    import torch

    dtype_map = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
    if args.model_config:
        if args.model_config not in MODEL_CONFIGS:
            raise SystemExit(f"unknown --model-config {args.model_config!r}; known: {sorted(MODEL_CONFIGS)}")
        if not args.random_weights:
            raise SystemExit("--model-config needs --random-weights (no hub downloads on these machines)")
        if not torch.cuda.is_available():
            raise KernelSkipped(
                f"--model-config {args.model_config} is a GPU kernel run (7B-shape random weights) "
                "and CUDA is not available on this machine"
            )
        from transformers import AutoConfig, AutoModelForCausalLM

        fields = dict(MODEL_CONFIGS[args.model_config])
        config = AutoConfig.for_model(fields.pop("model_type"), **fields)
        dtype = dtype_map[args.dtype or "bf16"]
        device = torch.device("cuda")
        torch.manual_seed(0)
        with torch.device(device):
            model = AutoModelForCausalLM.from_config(config, dtype=dtype, attn_implementation=args.attn)
        model.eval()
        desc = f"{args.model_config} (random weights)"
        return model, None, device, dtype, desc
    from engine.backends.model import load_model

    loaded = load_model(args.model, device=args.device, progress=log)
    model = loaded.model
    if args.dtype:
        model.to(dtype_map[args.dtype])
    if args.attn != "sdpa":
        model.set_attn_implementation(args.attn)
    dtype = next(model.parameters()).dtype
    return model, loaded.tokenizer, loaded.device, dtype, f"{args.model} ({loaded.spec})"


def _sync(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _median_ms(fn: Callable[[], None], device, trials: int, warmup: int) -> tuple[float, list[float]]:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(trials):
        _sync(device)
        t0 = time.perf_counter()
        fn()
        _sync(device)
        times.append((time.perf_counter() - t0) * 1000.0)
    return statistics.median(times), times


# --------------------------------------------------------------------------- kernel sweep


class PrefixedCache:
    """A model with a fixed random prefix in its KV cache; every measurement crops back to it."""

    def __init__(self, model, device, prefix_len: int, vocab: int, seed: int = 0):
        import torch
        from transformers import DynamicCache

        self.model, self.device, self.prefix_len = model, device, prefix_len
        gen = torch.Generator().manual_seed(seed)
        self.vocab = vocab
        prefix = torch.randint(0, vocab, (1, prefix_len), generator=gen).to(device)
        self.cache = DynamicCache()
        with torch.inference_mode():
            self.model(input_ids=prefix, past_key_values=self.cache, use_cache=True, logits_to_keep=1)
        self.gen = gen

    def random_ids(self, n: int):
        import torch

        return torch.randint(0, self.vocab, (1, n), generator=self.gen).to(self.device)

    def forward(self, ids):
        import torch

        with torch.inference_mode():
            return self.model(input_ids=ids, past_key_values=self.cache, use_cache=True, logits_to_keep=1).logits

    def reset(self) -> None:
        if self.cache.get_seq_length() > self.prefix_len:
            self.cache.crop(self.prefix_len - self.cache.get_seq_length())  # negative = tokens to drop

    def ar(self, ids) -> None:
        for i in range(ids.shape[1]):
            self.forward(ids[:, i : i + 1])
        self.reset()

    def pp(self, ids) -> None:
        self.forward(ids)
        self.reset()


def sweep(pc: PrefixedCache, ns, trials: int, warmup: int) -> list[dict]:
    rows = []
    for n in ns:
        ids = pc.random_ids(n)
        ar_ms, ar_all = _median_ms(lambda: pc.ar(ids), pc.device, trials, warmup)
        pp_ms, pp_all = _median_ms(lambda: pc.pp(ids), pc.device, trials, warmup)
        row = {"N": n, "ar_ms": ar_ms, "pp_ms": pp_ms, "s": ar_ms / pp_ms,
               "ar_ms_per_token": ar_ms / n, "ar_trials_ms": ar_all, "pp_trials_ms": pp_all}
        rows.append(row)
        log(f"N={n}: AR {ar_ms:.2f} ms, PP {pp_ms:.2f} ms, s={row['s']:.2f}")
    return rows


# --------------------------------------------------------------------------- fixed costs


def measure_fixed_costs(pc: PrefixedCache, tokenizer, reps: int, trials: int, warmup: int) -> dict:
    """c_mask, c_sync, c_forced (ms) at the prefix length; see the module docstring."""
    import torch

    logits = pc.forward(pc.random_ids(1))[0, -1]
    reset = pc.reset
    reset()
    allowed = torch.tensor(sorted(set(range(0, min(pc.vocab, 4000), 333))), device=pc.device)  # 12 ids

    def plain() -> None:
        for _ in range(reps):
            int(torch.argmax(logits).item())

    def masked() -> None:
        for _ in range(reps):
            int(allowed[torch.argmax(logits.index_select(0, allowed))].item())

    plain_ms, _ = _median_ms(plain, pc.device, trials, warmup)
    masked_ms, _ = _median_ms(masked, pc.device, trials, warmup)
    c_mask_raw = (masked_ms - plain_ms) / reps
    c_mask = max(0.0, c_mask_raw)

    # per-op CPU work: two .item() converts, four small decodes, a substring check
    small = [[int(i)] for i in pc.random_ids(4)[0].tolist()]
    t1 = torch.tensor(7, device=pc.device)
    t2 = torch.tensor(11, device=pc.device)

    def decode(ids) -> str:
        if tokenizer is None:
            return "".join(chr(65 + (i % 26)) for i in ids)
        return tokenizer.decode(ids, skip_special_tokens=False)

    def sync_work() -> None:
        for _ in range(reps):
            a, b = t1.item(), t2.item()
            text = "".join(decode(ids) for ids in small)
            _ = "</gen>" in text and a < b

    sync_ms, _ = _median_ms(sync_work, pc.device, trials, warmup)
    c_sync = sync_ms / reps

    one = pc.random_ids(1)
    four = pc.random_ids(4)
    one_ms, _ = _median_ms(lambda: pc.pp(one), pc.device, max(trials, 5), warmup)
    forced_ms, _ = _median_ms(lambda: pc.pp(four), pc.device, max(trials, 5), warmup)
    return {
        "c_mask_ms": c_mask,
        "c_mask_raw_ms": c_mask_raw,  # may be slightly negative: timing noise around zero
        "c_sync_ms": c_sync,
        "c_forced_ms": forced_ms,
        "c_forced_extra_ms": forced_ms - one_ms,
        "one_token_forward_ms": one_ms,
        "forced_literal_len": 4,
        "mask_allowed_ids": int(allowed.numel()),
    }


# --------------------------------------------------------------------------- main


def measure_kernel(model, tokenizer, device, *, ns=FULL_NS, trials: int = 5, warmup: int = 1,
                   prefix: int = 1024, reps: int = 200) -> dict:
    """Sweep s(N) and the fixed costs on an already loaded model; returns the kernel report fields:
    rows [{N, ar_ms, pp_ms, s, ...}], tau_ms, fixed_costs, m_star, m_star_safe, m_star_with_forced, c_ms."""
    from evaluation.costmodel import FixedCosts, KernelCurve, m_star, m_star_safe

    pc = PrefixedCache(model, device, prefix, model.config.vocab_size)
    rows = sweep(pc, ns, trials, warmup)
    fixed = measure_fixed_costs(pc, tokenizer, reps=reps, trials=max(trials, 5), warmup=1)
    tau = rows[0]["ar_ms"] / rows[0]["N"] if rows[0]["N"] == 1 else fixed["one_token_forward_ms"]
    curve = KernelCurve(ns=tuple(r["N"] for r in rows), speedups=tuple(r["s"] for r in rows), tau_ms=tau,
                        fixed=FixedCosts(fixed["c_mask_ms"], fixed["c_sync_ms"], fixed["c_forced_ms"]))
    c = curve.fixed.c_ms
    return {
        "rows": rows,
        "tau_ms": tau,
        "fixed_costs": fixed,
        "m_star": m_star(curve.s, c, tau, curve.ns),
        "m_star_safe": m_star_safe(curve.s, curve.ns),
        "m_star_with_forced": m_star(curve.s, c + curve.fixed.c_forced_ms, tau, curve.ns),
        "c_ms": c,
    }


def fixed_cost_rows(k: dict) -> list[dict]:
    """The fixed-cost / m* summary of a kernel report as table rows."""
    f = k["fixed_costs"]
    return [{"quantity": "tau (1-token decode) ms", "value": k["tau_ms"]},
            {"quantity": "c_mask ms", "value": f["c_mask_ms"]},
            {"quantity": "c_sync ms", "value": f["c_sync_ms"]},
            {"quantity": "c_forced ms (4-token forward)", "value": f["c_forced_ms"]},
            {"quantity": "c_forced excess over 1-token ms", "value": f["c_forced_extra_ms"]},
            {"quantity": "m* (s > 1 + c/(N tau))", "value": k["m_star"]},
            {"quantity": "m* safe (s > 1.5)", "value": k["m_star_safe"]},
            {"quantity": "m* with c_forced in c", "value": k["m_star_with_forced"]}]


def run(args) -> dict:
    import torch

    from benchmarks.common import markdown_table

    ns = tuple(args.ns) if args.ns else (QUICK_NS if args.quick else FULL_NS)
    trials = args.trials or (2 if args.quick else 5)
    prefix = args.prefix or (128 if args.quick else 1024)
    if args.threads:
        torch.set_num_threads(args.threads)
    model, tokenizer, device, dtype, desc = build_model(args)
    log(f"kernel: {desc} on {device} {dtype}, prefix {prefix}, N={list(ns)}, {trials} trials + {args.warmup} warm-up")
    k = measure_kernel(model, tokenizer, device, ns=ns, trials=trials, warmup=args.warmup, prefix=prefix,
                       reps=20 if args.quick else 200)
    rows = k.pop("rows")
    table_rows = [{key: r[key] for key in ("N", "ar_ms", "pp_ms", "s")} for r in rows]
    config = {"model": desc, "device": str(device), "dtype": str(dtype).replace("torch.", ""),
              "prefix": prefix, "ns": list(ns), "trials": trials, "warmup": args.warmup,
              "logits_to_keep": 1, "attn": args.attn, "threads": torch.get_num_threads(),
              "quick": bool(args.quick)}
    extra = {**k, "config": config, "full_rows": rows}
    report = write_report("kernel", table_rows, args.json_path, extra=extra,
                          title=f"Kernel s(N): {desc}, {device} {config['dtype']}, prefix {prefix}")
    print("## Fixed costs and m*\n")
    print(markdown_table(fixed_cost_rows(k)))
    print()
    return report


def parser():
    p = bench_argparser("Kernel microbenchmark: s(N), fixed costs, m*")
    p.add_argument("--model", default="default", help="model spec (default / HF dir / .gguf)")
    p.add_argument("--device", default="auto")
    p.add_argument("--dtype", choices=("fp32", "bf16", "fp16"), default=None,
                   help="override the dtype (default: fp32 on CPU, bf16 on CUDA)")
    p.add_argument("--attn", default="sdpa", choices=("sdpa", "eager"))
    p.add_argument("--model-config", default=None, help=f"random-weight shape: {sorted(MODEL_CONFIGS)} (CUDA only)")
    p.add_argument("--random-weights", action="store_true")
    p.add_argument("--prefix", type=int, default=None, help="KV prefix length (default 1024; 128 with --quick)")
    p.add_argument("--ns", type=int, nargs="+", default=None, help="span lengths N")
    p.add_argument("--trials", type=int, default=None, help="timed trials per N (default 5; 2 with --quick)")
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--threads", type=int, default=None,
                   help="torch CPU threads (default: torch's choice; 1 is steadier on a busy machine)")
    p.add_argument("--quick", action="store_true", help="few N, few trials, short prefix (smoke test)")
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    try:
        run(args)
    except KernelSkipped as exc:
        print(f"SKIPPED: {exc}")
        if args.json_path is not None:
            write_report("kernel", [], args.json_path, extra={"skipped": str(exc)}, title="Kernel (skipped)")
        return 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
