"""engine.backends.model: spec errors, device choice, atomic cache writes, cache round trip, tiny model."""
from __future__ import annotations

import shutil

import pytest
import torch

from engine.backends import model as em
from engine.backends.model import ModelLoadError, load_model, tiny_random_model


@pytest.fixture
def tmp_cache(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("CAD_CACHE_DIR", str(root))
    return root


def test_missing_path_says_what_to_pass(tmp_path):
    with pytest.raises(ModelLoadError, match="not found.*'default'.*config.json.*gguf"):
        load_model(str(tmp_path / "nope.gguf"), device="cpu")


def test_text_file_renamed_gguf_is_rejected(tmp_path):
    fake = tmp_path / "model.gguf"
    fake.write_text("this is not a model\n")
    with pytest.raises(ModelLoadError, match="not a GGUF file"):
        load_model(str(fake), device="cpu")
    with pytest.raises(ModelLoadError, match="not a GGUF file"):
        em.load_tokenizer(str(fake))


def test_directory_without_config_is_rejected(tmp_path):
    with pytest.raises(ModelLoadError, match="without config.json"):
        load_model(str(tmp_path), device="cpu")


def test_truncated_gguf_gives_model_load_error(tmp_path, tmp_cache):
    src = em.default_gguf_path()
    broken = tmp_path / "truncated.gguf"
    with open(src, "rb") as fh:
        broken.write_bytes(fh.read(200_000))  # valid magic + part of the metadata
    with pytest.raises(ModelLoadError, match="truncated.gguf.*re-download"):
        load_model(str(broken), device="cpu", progress=lambda m: None)
    # nothing half-written was published
    assert not list(tmp_cache.glob("models/truncated*"))


def test_cuda_request_without_cuda_is_an_error():
    if torch.cuda.is_available():
        pytest.skip("CUDA present")
    with pytest.raises(ModelLoadError, match="CUDA is not available"):
        em.choose_device("cuda")
    assert em.choose_device("auto") == (torch.device("cpu"), torch.float32)
    with pytest.raises(ModelLoadError, match="unknown device"):
        em.choose_device("tpu")


def test_cache_root_honours_env(tmp_cache):
    assert em.cache_root() == tmp_cache
    entry = em.cache_entry_dir(em.default_gguf_path())
    assert entry.parent == tmp_cache / "models"
    assert entry.name.startswith("SmolLM2-135M-Instruct.Q4_1-")


def _fake_gguf_loader(monkeypatch, tiny):
    """Make the GGUF dequantization step return a tiny model (the cache logic is what's tested)."""
    import transformers

    real = transformers.AutoModelForCausalLM.from_pretrained

    def fake(path, *args, **kwargs):
        if kwargs.get("gguf_file"):
            return tiny.model
        return real(path, *args, **kwargs)

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", fake)


def test_killed_build_leaves_no_entry_and_next_load_succeeds(tmp_cache, monkeypatch, real_tokenizer):
    tiny = tiny_random_model(real_tokenizer, layers=1, hidden=32)
    _fake_gguf_loader(monkeypatch, tiny)
    entry = em.cache_entry_dir(em.default_gguf_path())

    def killed(tmp, entry):
        raise KeyboardInterrupt("simulated kill after the weights were written")

    with monkeypatch.context() as m:
        m.setattr(em, "_publish", killed)
        with pytest.raises(KeyboardInterrupt):
            load_model("default", device="cpu", progress=lambda msg: None, adapter="none")
    assert not entry.exists()
    assert list(entry.parent.glob(".*tmp-*")) == []

    # a partially written entry without the completion marker is never trusted
    entry.mkdir(parents=True)
    (entry / "config.json").write_text("{")
    msgs: list[str] = []
    loaded = load_model("default", device="cpu", progress=msgs.append, adapter="none")
    assert any("Dequantizing" in m and "first start only" in m for m in msgs)
    assert (entry / "cad-cache.json").is_file()
    assert loaded.model.config.num_hidden_layers == 1
    ids = torch.tensor([[1, 2, 3, 4]])
    with torch.no_grad():
        assert torch.equal(loaded.model(ids).logits, tiny.model(ids).logits)


def test_tiny_random_model_is_seeded_and_uses_tokenizer_vocab(real_tokenizer):
    a = tiny_random_model(real_tokenizer, layers=2, hidden=64, seed=3)
    b = tiny_random_model(real_tokenizer, layers=2, hidden=64, seed=3)
    c = tiny_random_model(real_tokenizer, layers=2, hidden=64, seed=4)
    ids = torch.tensor([real_tokenizer.encode("def f(x):\n    return x")])
    with torch.no_grad():
        la, lb, lc = (m.model(ids).logits for m in (a, b, c))
    assert la.shape[-1] == len(real_tokenizer)
    assert torch.equal(la, lb)
    assert not torch.equal(la, lc)
    assert a.dtype == torch.float32 and a.context_length > 0


@pytest.mark.real_model
def test_cache_round_trip_matches_direct_gguf_load(tmp_cache):
    """First load dequantizes into an empty cache; the second load reads it and gives identical logits
    to transformers loading the GGUF directly."""
    from transformers import AutoModelForCausalLM

    gguf = em.default_gguf_path()
    msgs: list[str] = []
    first = load_model("default", device="cpu", progress=msgs.append, adapter="none")
    assert any("Dequantizing" in m for m in msgs)
    entry = em.cache_entry_dir(gguf)
    assert (entry / "model.safetensors").is_file() and (entry / "cad-cache.json").is_file()
    assert list(entry.parent.glob(".*tmp-*")) == []

    msgs.clear()
    second = load_model("default", device="cpu", progress=msgs.append, adapter="none")
    assert msgs == []  # no dequantization the second time
    assert second.context_length == 8192
    assert second.model.config._attn_implementation == "sdpa"

    direct = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    text = "def add(a, b):\n    return a + b\n"
    ids = torch.tensor([second.tokenizer.encode(text)])
    with torch.no_grad():
        l_cached = second.model(ids).logits
        l_direct = direct(ids).logits
    assert torch.equal(l_cached, l_direct)
    assert torch.equal(first.model(ids).logits, l_cached)

    # the cached tokenizer encodes exactly like the GGUF tokenizer
    em.load_tokenizer.cache_clear()
    tok = em.load_tokenizer("default")
    assert tok.encode(text) == second.tokenizer.encode(text)
    shutil.rmtree(tmp_cache, ignore_errors=True)
