"""``cad-train``: build the training data, fine-tune, export the adapter.

    cad-train data --out data/cad-train [--per-lang 800] [--seed 0]
    cad-train fit  --data data/cad-train --out runs/lora-r16 [--rank 16] [--epochs 1] [--threads 1]
    cad-train ship --adapter runs/lora-r16/adapter     # copy into engine/weights (what "default" loads)
    cad-train extract --tuned runs/full/adapter --out runs/full-r64 --rank 64   # full FT -> LoRA adapter
    cad-train score --data data/cad-train --models default,default+runs/full-r64  # teacher-forced, side by side

``fit`` resumes from ``--out``'s checkpoint when one exists (run the same command again after a
kill). Training never runs in CI: CI uses the committed adapter.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import sys
from pathlib import Path


def parse_per_lang(text: str) -> dict:
    """``800`` (every language) or ``yaml=900,toml=900,*=0`` (per language; ``*`` the others)."""
    from training.langs import HELD_OUT_LANGS, TRAIN_LANGS

    if text.strip().isdigit():
        return {"*": int(text)}
    out = {"*": 0}
    for part in filter(None, (x.strip() for x in text.split(","))):
        lang, _, count = part.partition("=")
        if lang not in TRAIN_LANGS + HELD_OUT_LANGS + ("*",) or not count.strip().isdigit():
            raise ValueError(f"--per-lang {text!r}: expected a number or LANG=N,... with LANG one of "
                             f"{', '.join(TRAIN_LANGS + HELD_OUT_LANGS)} or *")
        out[lang] = int(count)
    return out


def _data(args) -> int:
    from training.dataset import build

    try:
        per_lang = parse_per_lang(args.per_lang)
    except ValueError as exc:
        print(f"cad-train data: {exc}", file=sys.stderr)
        return 2
    manifest = build(Path(args.out), per_lang=per_lang, seed=args.seed, max_tokens=args.max_tokens,
                     progress=lambda m: print(f"[cad-train data] {m}", file=sys.stderr, flush=True))
    print(json.dumps({k: v["cases"] for k, v in manifest["splits"].items()}))
    return 0


def _fit(args) -> int:
    from training.fit import FitConfig
    from training.loop import fit

    fields = {f.name for f in dataclasses.fields(FitConfig)}
    config = FitConfig(**{k: v for k, v in vars(args).items() if k in fields and v is not None})
    path = fit(config, log=lambda m: print(f"[cad-train] {m}", file=sys.stderr, flush=True))
    print(str(path))
    return 0


def _ship(args) -> int:
    from engine.backends.adapters import ADAPTER_CONFIG, ADAPTER_WEIGHTS, PROFILE_FILE, SHIPPED_ADAPTER, is_adapter_dir

    src = Path(args.adapter)
    if not is_adapter_dir(src):
        print(f"cad-train ship: {src} is not an adapter directory (run `cad-train fit` first)", file=sys.stderr)
        return 2
    from training.loop import staged_dir

    with staged_dir(SHIPPED_ADAPTER) as tmp:   # the adapter's own files only (not peft's model card, not a run's logs)
        tmp.mkdir()
        for name in (ADAPTER_CONFIG, ADAPTER_WEIGHTS, PROFILE_FILE):
            if (src / name).is_file():
                shutil.copy2(src / name, tmp / name)
        profile = json.loads((tmp / PROFILE_FILE).read_text()) if (tmp / PROFILE_FILE).is_file() else {}
        profile["trained_on"] = profile.get("base")
        profile["base"] = "default"     # what "default" loads: the shipped adapter is for the default base
        (tmp / PROFILE_FILE).write_text(json.dumps(profile, indent=2) + "\n")
    print(f"shipped {src} -> {SHIPPED_ADAPTER}\n"
          f"the copy probe of these weights is gone with the old adapter: refit it with `python -m training.probe` "
          f"(until then the SwitchSD drafter gates on its kappa-gram match alone)")
    return 0


def _extract(args) -> int:
    from training.extract import ExtractError, extract_adapter

    try:
        report = extract_adapter(args.tuned, args.out, rank=args.rank, base=args.base or "",
                                 log=lambda m: print(f"[cad-train extract] {m}", file=sys.stderr, flush=True))
    except ExtractError as exc:
        print(f"cad-train extract: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(report, indent=2))
    return 0


def _score(args) -> int:
    from training.score import markdown, score_models

    specs = [s for s in args.models.split(",") if s]
    try:
        rows = score_models(args.data, specs, split=args.split, cases=args.cases,
                            log=lambda m: print(f"[cad-train score] {m}", file=sys.stderr, flush=True))
    except FileNotFoundError as exc:
        print(f"cad-train score: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(rows))
    print(markdown(rows))
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="cad-train", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("data", help="build train/val/test JSONL + manifest from local source trees")
    d.add_argument("--out", required=True)
    d.add_argument("--per-lang", default="800",
                   help="synthetic train cases per language: N, or LANG=N,... (e.g. yaml=900,toml=900; * for the rest, default 0)")
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--max-tokens", type=int, default=8000, help="drop cases whose context+target is longer")
    d.set_defaults(func=_data)
    f = sub.add_parser("fit", help="fine-tune a LoRA adapter (resumes from --out)")
    f.add_argument("--data", required=True)
    f.add_argument("--out", required=True)
    f.add_argument("--base", default=None, help="base model spec (default: the shipped GGUF)")
    f.add_argument("--profile", default=None, choices=["short", "teach"])
    for name, typ in (("rank", int), ("alpha", int), ("lr", float), ("epochs", float), ("accum", int),
                      ("warmup", int), ("threads", int), ("seed", int), ("max_cases", int), ("val_cases", int),
                      ("val_every", int), ("checkpoint_minutes", float), ("max_updates", int),
                      ("batch_tokens", int), ("time_budget_minutes", float)):
        f.add_argument("--" + name.replace("_", "-"), dest=name, type=typ, default=None)
    f.add_argument("--gradient", choices=["program", "full"], default=None)
    f.add_argument("--full-finetune", dest="full_finetune", action="store_true", default=None)
    f.add_argument("--device", default=None)
    f.add_argument("--init-adapter", dest="init_adapter", default=None, help="continue from this adapter's weights")
    f.set_defaults(func=_fit)
    s = sub.add_parser("ship", help="install an exported adapter as the default model's adapter")
    s.add_argument("--adapter", required=True)
    s.set_defaults(func=_ship)
    e = sub.add_parser("extract", help="turn a fully fine-tuned model into a LoRA adapter (truncated SVD)")
    e.add_argument("--tuned", required=True, help="the adapter/ folder of a `fit --full-finetune` run")
    e.add_argument("--out", required=True)
    e.add_argument("--rank", type=int, default=64)
    e.add_argument("--base", default=None, help="the untrained base (default: the one the run recorded)")
    e.set_defaults(func=_extract)
    c = sub.add_parser("score", help="teacher-forced val loss / val_exact of several models on the same cases")
    c.add_argument("--data", required=True)
    c.add_argument("--models", required=True, help="comma-separated model specs")
    c.add_argument("--split", default="val", choices=["train", "val", "test"])
    c.add_argument("--cases", type=int, default=60)
    c.set_defaults(func=_score)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    raise SystemExit(main())
