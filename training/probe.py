"""The copy-intent probe of the SwitchSD drafter (``engine.drafters.switchsd``): data, fit, selection.

``python -m training.probe`` writes ``engine/weights/smollm2-135m-cad/copy_probe.json``:

* data: edit prompts + gold answers of the HumanEvalPack TRAIN split only (``evaluation.corpus.split``;
  the held-out part is never read), in both framings the drafter serves: full regeneration
  (``engine.decode.regen.regen_framing`` + the gold document + the end marker) and the program
  decoder (``training.render.render_case``: the oracle program, at the positions the model chooses:
  copy headers, gen text, closers). One teacher-forced forward per example through the DEFAULT
  model (shipped adapter merged, CPU fp32) captures every layer's hidden states
  (``engine.backends.hidden.capture``, both sites);
* labels (the paper's conservative proxy): the state of position j is positive when token j+1
  belongs to a verbatim run of >= ``--run`` (5) tokens that already occurred earlier in the sequence;
* fit: per layer and site, a linear probe WITHOUT bias, logistic regression with L2 (torch L-BFGS);
* selection: examples are split into fit / validation parts (by example, ``--val-frac``); the layer,
  site and threshold tau maximise F1 on the validation part; its precision / recall / F1 are stored.

The file also stores the model's signature (sizes and the Frobenius norms of the probed layer's
weights, with a tolerance measured against the base model without the adapter), so the drafter
uses the probe only on the model it was trained on.
"""
from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import torch

from engine.backends.hidden import SITES, capture, decoder_layers
from engine.prompt import REGEN_CLOSE

PROBE_PATH = Path(__file__).resolve().parents[1] / "engine" / "weights" / "smollm2-135m-cad" / "copy_probe.json"


def copy_labels(ids: list[int], run: int) -> list[bool]:
    """``labels[t]``: token t lies in a window of ``run`` tokens that occurred earlier (starting before it)."""
    first: dict[tuple[int, ...], int] = {}
    inside = [False] * len(ids)
    for a in range(len(ids) - run + 1):
        gram = tuple(ids[a:a + run])
        if gram in first:
            for t in range(a, a + run):
                inside[t] = True
        else:
            first[gram] = a
    return inside


def examples(tokenizer, pairs, profile: str) -> list[tuple[str, list[int], list[int]]]:
    """(task id, ids, positions j whose state is probed: it predicts token j+1 of the answer)."""
    from engine.decode.regen import regen_framing
    from training.render import UnrenderableCase, render_case

    out = []
    for pair in pairs:
        framing = regen_framing(tokenizer, pair.document, pair.instruction)
        answer = tokenizer.encode(pair.gold + REGEN_CLOSE, add_special_tokens=False)
        ids = framing.prompt_ids + answer
        out.append((pair.task_id, ids, list(range(len(framing.prompt_ids) - 1, len(ids) - 1))))
        try:
            case = render_case(pair, tokenizer, profile=profile)
        except UnrenderableCase:
            continue
        chosen = [j - 1 for j in range(case.prompt_len, len(case.ids)) if case.loss_mask[j]]
        out.append((pair.task_id, case.ids, chosen))
    return out


@torch.inference_mode()
def collect(loaded, items, run: int, per_example: int, seed: int):
    """Hidden states [site][N, layers, hidden], labels [N] and the example index of each row."""
    model = loaded.model
    n_layers = len(decoder_layers(model))
    rng = random.Random(seed)
    feats: dict[str, list[torch.Tensor]] = {site: [] for site in SITES}
    labels, owner = [], []
    for k, (_task, ids, positions) in enumerate(items):
        if len(positions) > per_example:
            positions = sorted(rng.sample(positions, per_example))
        inside = copy_labels(ids, run)
        index = torch.tensor(positions)
        with capture(model, range(n_layers), "mid") as mid, capture(model, range(n_layers), "out") as out:
            model(input_ids=torch.tensor([ids], device=loaded.device))
        for site, got in (("mid", mid), ("out", out)):
            feats[site].append(torch.stack([got[layer][0][0, index].float().cpu() for layer in range(n_layers)], 1))
        labels += [inside[j + 1] for j in positions]
        owner += [k] * len(positions)
    return ({site: torch.cat(rows) for site, rows in feats.items()}, torch.tensor(labels, dtype=torch.float32),
            torch.tensor(owner))


def fit_probe(x: torch.Tensor, y: torch.Tensor, l2: float, steps: int = 100) -> torch.Tensor:
    """Weights w (no bias) of logistic regression p = sigmoid(w . x), L2-regularised, by L-BFGS."""
    w = torch.zeros(x.shape[1], requires_grad=True)
    opt = torch.optim.LBFGS([w], max_iter=steps, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(x @ w, y) + l2 * (w @ w)
        loss.backward()
        return loss

    opt.step(closure)
    return w.detach()


def best_threshold(scores: torch.Tensor, y: torch.Tensor) -> dict:
    """The threshold tau on sigmoid scores that maximises F1 of ``scores >= tau`` (and its P / R / F1)."""
    order = torch.argsort(scores, descending=True)
    s, t = scores[order], y[order]
    tp = torch.cumsum(t, 0)
    k = torch.arange(1, len(t) + 1, dtype=torch.float32)
    precision, recall = tp / k, tp / t.sum().clamp(min=1)
    f1 = 2 * precision * recall / (precision + recall).clamp(min=1e-9)
    last = torch.ones(len(s), dtype=torch.bool)     # only cut between distinct scores
    last[:-1] = s[:-1] != s[1:]
    f1 = torch.where(last, f1, torch.zeros_like(f1))
    i = int(torch.argmax(f1))
    return {"tau": float(s[i]), "precision": float(precision[i]), "recall": float(recall[i]), "f1": float(f1[i])}


def signature(model, layer: int) -> dict:
    """Sizes and the Frobenius norms of ``layer``'s weight matrices (the drafter checks them on attach)."""
    params = dict(decoder_layers(model)[layer].named_parameters())
    return {
        "hidden_size": int(model.config.hidden_size),
        "num_hidden_layers": int(model.config.num_hidden_layers),
        "vocab_size": int(model.config.vocab_size),
        "layer_norms": {name: float(p.detach().double().norm()) for name, p in sorted(params.items()) if p.ndim == 2},
    }


def signature_distance(a: dict, b: dict) -> float:
    """Largest relative difference of two signatures' weight norms (inf when the sizes differ)."""
    keys = ("hidden_size", "num_hidden_layers", "vocab_size")
    if any(a.get(k) != b.get(k) for k in keys) or set(a["layer_norms"]) != set(b["layer_norms"]):
        return float("inf")
    return max(abs(a["layer_norms"][n] - b["layer_norms"][n]) / max(abs(a["layer_norms"][n]), 1e-12)
               for n in a["layer_norms"])


def train(args) -> dict:
    from engine.backends.model import load_model
    from evaluation.corpus import load_pairs, split

    start = time.perf_counter()
    loaded = load_model("default", "cpu")
    pairs = []
    for lang in args.langs:
        train_pairs, _held_out = split(load_pairs(lang))     # the held-out part is never used
        pairs += train_pairs[:args.pairs]
    items = examples(loaded.tokenizer, pairs, loaded.prompt_profile)
    feats, y, owner = collect(loaded, items, args.run, args.per_example, args.seed)
    tasks = sorted({task for task, _, _ in items})
    val_tasks = set(random.Random(args.seed).sample(tasks, max(1, round(len(tasks) * args.val_frac))))
    is_val = torch.tensor([items[k][0] in val_tasks for k in owner.tolist()])
    results = []
    for site in SITES:
        x = feats[site]
        scale = float(x[~is_val].norm(dim=-1).mean())   # one global scale: the probe stays bias-free
        for layer in range(x.shape[1]):
            xl = x[:, layer] / scale
            w = fit_probe(xl[~is_val], y[~is_val], args.l2)
            val = best_threshold(torch.sigmoid(xl[is_val] @ w), y[is_val])
            results.append({"site": site, "layer": layer, "weight": w / scale, **val})
            print(f"{site:>3} layer {layer:2d}: val F1 {val['f1']:.3f} (P {val['precision']:.3f} "
                  f"R {val['recall']:.3f}, tau {val['tau']:.3f})", flush=True)
    best = max(results, key=lambda r: r["f1"])
    sig = signature(loaded.model, best["layer"])
    base = load_model("default", "cpu", adapter="none")
    gap = signature_distance(sig, signature(base.model, best["layer"]))
    probe = {
        "format": 1,
        "what": "SwitchSD copy-intent probe: p = sigmoid(weight . h), h = hidden state at (layer, site)",
        "layer": best["layer"], "site": best["site"], "tau": best["tau"],
        "validation": {k: best[k] for k in ("precision", "recall", "f1")} | {
            "positions": int(is_val.sum()), "positive_rate": float(y[is_val].mean())},
        "fit": {"positions": int((~is_val).sum()), "positive_rate": float(y[~is_val].mean()),
                "train_tasks": len(tasks) - len(val_tasks), "val_tasks": len(val_tasks), "l2": args.l2,
                "run": args.run, "langs": list(args.langs), "examples": len(items),
                "seconds": round(time.perf_counter() - start, 1)},
        "per_layer_f1": {f"{r['site']}:{r['layer']}": round(r["f1"], 4) for r in results},
        "model": sig | {"tolerance": gap / 10, "base_model_distance": gap},
        "weight": [round(float(v), 7) for v in best["weight"]],
    }
    return probe


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m training.probe", description=__doc__.split("\n")[0])
    ap.add_argument("--langs", nargs="+", default=["python", "js"])
    ap.add_argument("--pairs", type=int, default=40, help="train-split pairs per language")
    ap.add_argument("--per-example", type=int, default=160, help="probed positions sampled per example")
    ap.add_argument("--run", type=int, default=5, help="verbatim run length that labels copy mode")
    ap.add_argument("--val-frac", type=float, default=0.25)
    ap.add_argument("--l2", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=PROBE_PATH)
    args = ap.parse_args(argv)
    probe = train(args)
    args.out.write_text(json.dumps(probe, indent=1) + "\n")
    v = probe["validation"]
    print(f"wrote {args.out}: {probe['site']} layer {probe['layer']}, tau {probe['tau']:.3f}, "
          f"validation P {v['precision']:.3f} R {v['recall']:.3f} F1 {v['f1']:.3f}")


if __name__ == "__main__":
    main()
