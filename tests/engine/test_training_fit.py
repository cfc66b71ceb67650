"""cad-train fit on a tiny random model: it learns, it is deterministic, a killed run resumes,
and the exported adapter loads with its prompt profile."""
from __future__ import annotations

import json
import warnings

import pytest

from training.families.common import EditCase

DOC = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory, make_tiny_model, real_tokenizer):
    d = tmp_path_factory.mktemp("tiny-base")
    tiny = make_tiny_model(real_tokenizer, init_range=0.02)
    tiny.model.save_pretrained(d)
    real_tokenizer.save_pretrained(d)
    return d


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("data")
    cases = [EditCase("bugfix", "operator", "python", DOC, "Fix the bug in add.", DOC.replace("a - b", "a + b")),
             EditCase("noop", "noop", "python", DOC, "Leave it as it is.", DOC)]
    (d / "train.jsonl").write_text("".join(json.dumps(c.as_dict()) + "\n" for c in cases))
    (d / "val.jsonl").write_text(json.dumps(cases[0].as_dict()) + "\n")
    return d


def _fit(tiny_dir, data_dir, out, **kw):
    from training.fit import FitConfig
    from training.loop import fit

    cfg = FitConfig(data=str(data_dir), out=str(out), base=str(tiny_dir), rank=4, alpha=8, accum=1,
                    warmup=0, epochs=50, val_cases=1, val_every=1000, checkpoint_minutes=0.0, threads=1, **kw)
    adapter = fit(cfg, log=lambda *a: None)
    rows = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    return adapter, [r["loss"] for r in rows if "loss" in r]


def test_fit_learns_and_is_deterministic(tiny_dir, data_dir, tmp_path):
    _, a = _fit(tiny_dir, data_dir, tmp_path / "a", max_updates=8, lr=1e-2)
    _, b = _fit(tiny_dir, data_dir, tmp_path / "b", max_updates=8, lr=1e-2)
    assert a == b
    assert min(a[-2:]) < min(a[:2]), a


def test_a_killed_run_resumes_where_its_checkpoint_was(tiny_dir, data_dir, tmp_path, monkeypatch):
    import training.loop as loop

    _, whole = _fit(tiny_dir, data_dir, tmp_path / "whole", max_updates=4, lr=1e-2)
    real_loss, calls = loop.case_loss, []

    def dies_in_update_3(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt  # the run is killed during its third update
        return real_loss(*args, **kwargs)

    monkeypatch.setattr(loop, "case_loss", dies_in_update_3)
    with pytest.raises(KeyboardInterrupt):
        _fit(tiny_dir, data_dir, tmp_path / "killed", max_updates=4, lr=1e-2)
    assert json.loads((tmp_path / "killed" / "checkpoint" / "state.json").read_text())["update"] == 2
    monkeypatch.setattr(loop, "case_loss", real_loss)
    _, resumed = _fit(tiny_dir, data_dir, tmp_path / "killed", max_updates=4, lr=1e-2)
    # updates 1-2 from the killed start, 3-4 from the resumed one: the same losses as one whole run
    assert resumed == pytest.approx(whole, rel=1e-4)


def test_resuming_with_another_max_updates_changes_the_runs_length(tiny_dir, data_dir, tmp_path):
    out = tmp_path / "run"
    _, first = _fit(tiny_dir, data_dir, out, max_updates=2, lr=1e-2)
    _, again = _fit(tiny_dir, data_dir, out, max_updates=2, lr=1e-2)      # the same command: already done
    assert len(first) == len(again) == 2
    _, longer = _fit(tiny_dir, data_dir, out, max_updates=5, lr=1e-2)     # lengthened: 3 more updates
    state = json.loads((out / "checkpoint" / "state.json").read_text())
    assert len(longer) == 5 and longer[:2] == first
    assert state["update"] == state["total_updates"] == 5 and state["config"]["max_updates"] == 5


def test_exported_adapter_loads_with_its_profile(tiny_dir, data_dir, tmp_path):
    import torch

    from engine.backends.model import load_model

    adapter, _ = _fit(tiny_dir, data_dir, tmp_path / "run", max_updates=3, lr=1e-2)
    profile = json.loads((adapter / "cad_profile.json").read_text())
    assert profile["prompt_profile"] == "short"
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)   # a user sees no library deprecation noise
        tuned = load_model(str(adapter), "cpu")
    base = load_model(str(tiny_dir), "cpu", adapter="none")
    assert tuned.prompt_profile == "short" and base.prompt_profile == "teach"
    w_tuned = tuned.model.model.layers[0].self_attn.q_proj.weight
    w_base = base.model.model.layers[0].self_attn.q_proj.weight
    assert not torch.equal(w_tuned, w_base)  # the LoRA delta was merged
    assert not any("lora" in n for n, _ in tuned.model.named_parameters())


def test_one_model_string_names_base_and_adapter(tiny_dir, data_dir, tmp_path):
    from engine.backends.adapters import AdapterError, choose

    untrained = choose("default+none")
    assert untrained.base == "default" and untrained.adapter is None and untrained.profile == "teach"
    adapter, _ = _fit(tiny_dir, data_dir, tmp_path / "run", max_updates=1, lr=1e-2)
    pair = choose(f"{tiny_dir}+{adapter}")
    assert pair.base == str(tiny_dir) and pair.adapter == adapter.resolve() and pair.profile == "short"
    with pytest.raises(AdapterError, match="not an adapter directory"):
        choose(f"{tiny_dir}+{tmp_path / 'nothing'}")


def test_padded_batch_loss_equals_the_per_case_losses(tiny_dir, real_tokenizer):
    """Right padding changes nothing: a batch's token-weighted loss is the per-case losses combined."""
    import torch

    from engine.backends.model import load_model
    from training.fit import batch_loss, case_loss
    from training.render import render_case

    lm = load_model(str(tiny_dir), "cpu", adapter="none").model
    cases = [EditCase("bugfix", "operator", "python", DOC, "Fix the bug in add.", DOC.replace("a - b", "a + b")),
             EditCase("noop", "noop", "python", DOC[:30], "Leave it.", DOC[:30])]
    rendered = [render_case(c, real_tokenizer) for c in cases]
    with torch.no_grad():
        parts = [case_loss(lm, rc.ids, rc.loss_mask, "full") for rc in rendered]
        together, n = batch_loss(lm, rendered)
    assert n == sum(k for _, k in parts)
    expected = sum(float(loss) * k for loss, k in parts) / n
    assert float(together) == pytest.approx(expected, rel=1e-4)


def test_batched_fit_learns_and_is_deterministic(tiny_dir, data_dir, tmp_path):
    _, a = _fit(tiny_dir, data_dir, tmp_path / "a", max_updates=6, lr=1e-2, batch_tokens=4096)
    assert min(a[-2:]) < min(a[:2]), a
    _, b = _fit(tiny_dir, data_dir, tmp_path / "b", max_updates=6, lr=1e-2, batch_tokens=4096)
    assert b == a                          # same batches, same order, same losses


def test_full_finetuning_from_an_adapter_starts_from_its_merged_weights(tiny_dir, data_dir, tmp_path):
    """--full-finetune --init-adapter: every weight trains, starting from the base with the adapter merged."""
    import torch

    from engine.backends.model import load_model
    from training.fit import FitConfig, build_trainable

    adapter, _ = _fit(tiny_dir, data_dir, tmp_path / "lora", max_updates=3, lr=1e-2)
    merged = load_model(f"{tiny_dir}+{adapter}", "cpu").model
    cfg = FitConfig(data=str(data_dir), out=str(tmp_path / "full"), base=str(tiny_dir), full_finetune=True,
                    init_adapter=str(adapter), device="cpu")
    _, model = build_trainable(cfg)
    params = dict(model.named_parameters())
    assert params and all(p.requires_grad for p in params.values())
    name = "model.layers.0.self_attn.q_proj.weight"
    assert torch.allclose(params[name], dict(merged.named_parameters())[name].float())
    full, losses = _fit(tiny_dir, data_dir, tmp_path / "full", max_updates=3, lr=1e-3, full_finetune=True,
                        init_adapter=str(adapter))
    assert (full / "model.safetensors").is_file() and len(losses) == 3
    assert load_model(str(full), "cpu").prompt_profile == "short"     # a model spec: weights, tokenizer, profile
