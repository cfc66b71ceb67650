"""cad-train extract: a fully fine-tuned model as a LoRA adapter (truncated SVD of each projection's change),
on a tiny random model; cad-train score compares models on the same cases."""
from __future__ import annotations

import json

import pytest
import torch

from training.families.common import EditCase

DOC = "def add(a, b):\n    return a - b\n"


def test_low_rank_factors_keep_the_best_rank_r_part():
    from training.extract import low_rank_factors

    g = torch.Generator().manual_seed(0)
    delta = torch.randn(12, 3, generator=g) @ torch.randn(3, 9, generator=g)      # rank 3
    b, a, energy = low_rank_factors(delta, 5)
    assert b.shape == (12, 5) and a.shape == (5, 9) and energy == pytest.approx(1.0)
    assert torch.allclose(b @ a, delta, atol=1e-5)
    b1, a1, energy1 = low_rank_factors(delta, 1)
    s = torch.linalg.svdvals(delta.double())
    assert energy1 == pytest.approx(float(s[0] ** 2 / (s ** 2).sum()))
    assert torch.linalg.matrix_rank(b1 @ a1) == 1
    assert low_rank_factors(torch.zeros(4, 4), 2)[2] == 1.0


@pytest.fixture(scope="module")
def dirs(tmp_path_factory, make_tiny_model, real_tokenizer):
    """A tiny base, and a 'fully fine-tuned' copy: rank-2 changes to every projection, one norm changed."""
    root = tmp_path_factory.mktemp("extract")
    tiny = make_tiny_model(real_tokenizer, init_range=0.02)
    tiny.model.save_pretrained(root / "base")
    real_tokenizer.save_pretrained(root / "base")
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, module in tiny.model.named_modules():
            if name.rsplit(".", 1)[-1].endswith("_proj"):
                out_f, in_f = module.weight.shape
                module.weight += 0.05 * torch.randn(out_f, 2, generator=g) @ torch.randn(2, in_f, generator=g)
        tiny.model.model.norm.weight += 0.1
    tiny.model.save_pretrained(root / "tuned")
    real_tokenizer.save_pretrained(root / "tuned")
    record = {"prompt_profile": "short", "base": str(root / "base"), "config": {"full_finetune": True}}
    (root / "tuned" / "cad_profile.json").write_text(json.dumps(record))
    return root, tiny.model


def test_extracted_adapter_reproduces_the_projections(dirs):
    from engine.backends.model import load_model
    from training.extract import extract_adapter

    root, tuned = dirs
    report = extract_adapter(root / "tuned", root / "adapter", rank=4)
    assert report["energy_mean"] == pytest.approx(1.0, abs=1e-6)
    assert list(report["left_out_relative_change"]) == ["model.norm.weight"]   # a LoRA cannot hold it
    profile = json.loads((root / "adapter" / "cad_profile.json").read_text())
    assert profile["base"] == str(root / "base") and profile["extracted"]["rank"] == 4
    loaded = load_model(str(root / "adapter"), "cpu")                  # the adapter names its base
    base = {k: v.detach() for k, v in load_model(str(root / "base"), "cpu", adapter="none").model.named_parameters()}
    assert loaded.prompt_profile == "short"
    got = {k: v.detach() for k, v in loaded.model.named_parameters()}
    want = {k: v.detach() for k, v in tuned.named_parameters()}
    for name in ("model.layers.0.self_attn.q_proj.weight", "model.layers.1.mlp.down_proj.weight"):
        error = float((got[name] - want[name]).abs().max())
        change = float((want[name] - base[name]).abs().max())
        assert error < 2e-3 * change, (name, error, change)         # fp16 factors: relative rounding only
    assert torch.equal(got["model.norm.weight"], base["model.norm.weight"])

    small = extract_adapter(root / "tuned", root / "adapter1", rank=1)
    assert 0.3 < small["energy_mean"] < 1.0 and small["bytes"] < report["bytes"]


def test_extract_refuses_what_does_not_fit(dirs, tmp_path, make_tiny_model, real_tokenizer):
    from training.extract import ExtractError, extract_adapter

    root, _ = dirs
    other = make_tiny_model(real_tokenizer, hidden=32, layers=1)
    other.model.save_pretrained(tmp_path / "other")
    real_tokenizer.save_pretrained(tmp_path / "other")
    with pytest.raises(ExtractError, match="not the same architecture|differ in parameters"):
        extract_adapter(tmp_path / "other", tmp_path / "x", rank=2, base=str(root / "base"))
    with pytest.raises(ExtractError, match="no config.json"):
        extract_adapter(tmp_path, tmp_path / "x", rank=2)
    with pytest.raises(ExtractError, match="at least 1"):
        extract_adapter(root / "tuned", tmp_path / "x", rank=0)
    assert not (tmp_path / "x").exists()


def test_score_compares_models_on_the_same_cases(dirs, tmp_path):
    from training.extract import extract_adapter
    from training.score import markdown, score_models

    root, _ = dirs
    extract_adapter(root / "tuned", root / "adapter", rank=4)
    case = EditCase("bugfix", "operator", "python", DOC, "Fix the bug in add.", DOC.replace("a - b", "a + b"))
    (tmp_path / "val.jsonl").write_text(json.dumps(case.as_dict()) + "\n")
    rows = score_models(tmp_path, [str(root / "tuned"), str(root / "adapter"), f"{root / 'base'}+none"])
    assert [r["cases"] for r in rows] == [1, 1, 1]
    # the adapter keeps the projections, not the norm: close to the tuned model, not equal to the base
    assert rows[1]["val_loss"] != rows[2]["val_loss"]
    assert "| model |" in markdown(rows)
    with pytest.raises(FileNotFoundError, match="cad-train data"):
        score_models(tmp_path / "none", ["default"])


def test_the_command_line_says_what_to_pass(tmp_path, capsys):
    from training.cli import main

    assert main(["extract", "--tuned", str(tmp_path), "--out", str(tmp_path / "x")]) == 2
    assert "fit --full-finetune" in capsys.readouterr().err
    assert main(["score", "--data", str(tmp_path), "--models", "default"]) == 2
    assert "cad-train data" in capsys.readouterr().err


def test_a_run_continued_from_another_run_is_measured_from_the_untrained_base(dirs, tmp_path):
    import shutil

    from training.extract import untrained_base

    root, _ = dirs
    shutil.copytree(root / "tuned", tmp_path / "tuned2")
    record = {"prompt_profile": "short", "base": str(root / "tuned"), "config": {"full_finetune": True}}
    (tmp_path / "tuned2" / "cad_profile.json").write_text(json.dumps(record))
    assert untrained_base(str(tmp_path / "tuned2")) == str(root / "base")
    assert untrained_base("default") == "default"


def test_ship_replaces_the_shipped_adapter_whole(dirs, tmp_path, monkeypatch, capsys):
    """cad-train ship: the adapter's files are copied beside the shipped one and swapped in (nothing of the
    old adapter is left, no staging directory stays), its profile says it is for the default base, and the
    copy probe's refit is asked for."""
    import engine.backends.adapters as adapters
    from training.cli import main
    from training.extract import extract_adapter

    root, _ = dirs
    extract_adapter(root / "tuned", tmp_path / "run", rank=2)
    (tmp_path / "run" / "README.md").write_text("peft's model card")     # not an adapter file: stays behind
    shipped = tmp_path / "weights" / "shipped"
    shipped.mkdir(parents=True)
    (shipped / "stale.bin").write_bytes(b"old")
    monkeypatch.setattr(adapters, "SHIPPED_ADAPTER", shipped)
    assert main(["ship", "--adapter", str(tmp_path / "run")]) == 0
    profile = json.loads((shipped / "cad_profile.json").read_text())
    assert profile["base"] == "default" and profile["trained_on"] == str(root / "base")
    assert not (shipped / "stale.bin").exists() and sorted(p.name for p in shipped.parent.iterdir()) == ["shipped"]
    assert sorted(p.name for p in shipped.iterdir()) == ["adapter_config.json", "adapter_model.safetensors",
                                                         "cad_profile.json"]
    assert "python -m training.probe" in capsys.readouterr().out
    assert main(["ship", "--adapter", str(tmp_path / "nothing")]) == 2
    assert "not an adapter directory" in capsys.readouterr().err and (shipped / "cad_profile.json").is_file()
