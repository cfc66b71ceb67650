"""engine.decode.program: always-parsing programs, forced-oracle replay, speculation losslessness, end of gen,
EOS, budget, cancellation, context overflow, split-literal tokenizers."""
from __future__ import annotations

import dataclasses
import random
import threading

import pytest

from evaluation.corpus import load_pairs
from engine.decode.program import decode_program
from engine.errors import ContextOverflowError, EditCancelled, ForcedProgramError
from engine.guide.tokens import token_table
from engine.decode.gen_end import decode
from engine.program.grammar import CopyLines, CopyTokens, Gen, parse, serialize
from engine.program.oracle import line_program, token_program
from engine.prompt import PROGRAM_OPEN, expanded_program_text, render_prompt

_WORDS = ["def", "return", "x", "y", "=", "+", "(", ")", ":", "if", "for", "i", "in", "range", "0", "1",
          "</gen>", "<copy", "</div>", "<gen>", "⟨", "é", "{", "}", ";", "'s'", "  ", "\t"]


def _random_document(rng: random.Random) -> str:
    n = rng.choice([0, 1, 1, 2, 3, 5, 8, 12, 20, 35])
    lines = [" ".join(rng.choice(_WORDS) for _ in range(rng.randint(0, 7))) for _ in range(n)]
    doc = "\n".join(lines)
    if rng.random() < 0.5:
        doc += "\n"
    if rng.random() < 0.1:
        doc = doc.replace("\n", "\r\n")
    return doc


def _check_program(res, document, *, token_level, n_tokens):
    program = res.program
    assert isinstance(program, tuple)
    assert parse(serialize(program)) == program
    n_lines = len(document.split("\n"))
    for op in program:
        assert isinstance(op, (Gen, CopyTokens if token_level else CopyLines))
        if isinstance(op, CopyLines):
            assert 1 <= op.start <= op.end <= n_lines
        if isinstance(op, CopyTokens):
            assert 0 <= op.start <= op.end < n_tokens
    assert res.text is not None, res.resolve_error  # decoded with mode="strict": indices valid
    if not res.stats.truncated:
        assert decode(res.tokenizer_for_test, res.output_ids).endswith("</program>")


def _run(loaded, document, instruction="Fix bugs.", **kw):
    res = decode_program(loaded, document, instruction, mode="strict", **kw)
    res.tokenizer_for_test = loaded.tokenizer
    return res


def test_random_documents_always_parse(real_tokenizer, make_tiny_model):
    models = [make_tiny_model(real_tokenizer, seed=s, hidden=32, layers=1, init_range=r)
              for s, r in ((0, 0.3), (1, 1.0), (2, 0.05))]
    rng = random.Random(0)
    kinds = set()
    for k in range(200):
        doc = _random_document(rng)
        loaded = models[k % 3]
        token_level = k % 5 == 4 and doc != ""
        res = _run(loaded, doc, max_new_tokens=rng.choice([8, 24, 40]), monotonic=k % 2 == 1,
                   token_level=token_level)
        n_tokens = len(real_tokenizer.encode(doc, add_special_tokens=False))
        _check_program(res, doc, token_level=token_level, n_tokens=n_tokens)
        kinds.update(type(op).__name__ for op in res.program)
    assert {"CopyLines", "Gen"} <= kinds  # the random models exercised both op kinds


def _sample_pairs(n_py, n_js):
    return load_pairs("python")[:n_py] + load_pairs("js")[:n_js]


def test_forced_oracle_reproduces_gold(tiny_model):
    for pair in _sample_pairs(6, 6):
        program = line_program(pair.document, pair.gold)
        res = _run(tiny_model, pair.document, pair.instruction, forced=program)
        assert res.program == program
        assert res.text == pair.gold
        # the decoder's stream is exactly the prompt renderer's expanded program
        assert decode(tiny_model.tokenizer, res.output_ids) == expanded_program_text(program, pair.document)[len(PROGRAM_OPEN):]


def test_forced_token_level_oracle_reproduces_gold(tiny_model):
    tok = tiny_model.tokenizer
    done = 0
    for pair in _sample_pairs(4, 4):
        doc_ids = tok.encode(pair.document, add_special_tokens=False)
        gold_ids = tok.encode(pair.gold, add_special_tokens=False)
        if decode(tok, doc_ids) != pair.document or decode(tok, gold_ids) != pair.gold:
            continue
        program = token_program(doc_ids, gold_ids, lambda ids: decode(tok, ids))
        res = _run(tiny_model, pair.document, pair.instruction, forced=program, token_level=True)
        assert res.program == program and res.text == pair.gold
        done += 1
    assert done >= 4


def test_forced_program_outside_the_document_is_rejected(tiny_model):
    with pytest.raises(ForcedProgramError, match="op #1"):
        _run(tiny_model, "a\nb\nc", forced=(CopyLines(1, 2), CopyLines(2, 9)))
    with pytest.raises(ForcedProgramError):
        _run(tiny_model, "a\nb\nc", forced=(CopyLines(2, 3), CopyLines(1, 1)), monotonic=True)


def test_speculative_headers_are_lossless_and_save_forwards(real_tokenizer, make_tiny_model):
    models = [make_tiny_model(real_tokenizer, seed=s, hidden=32, layers=1, init_range=0.5) for s in (3, 4)]
    rng = random.Random(5)
    on_total = off_total = 0
    for k in range(30):
        doc = _random_document(rng)
        kw = dict(max_new_tokens=32, monotonic=k % 2 == 0)
        on = _run(models[k % 2], doc, speculative_headers=True, **kw)
        off = _run(models[k % 2], doc, speculative_headers=False, **kw)
        assert on.program == off.program and on.output_ids == off.output_ids
        on_total += on.stats.forwards
        off_total += off.stats.forwards
    pairs = _sample_pairs(4, 4)
    for pair in pairs:  # oracle programs: the guesses are often right
        program = line_program(pair.document, pair.gold)
        on = _run(models[0], pair.document, pair.instruction, forced=program, speculative_headers=True)
        off = _run(models[0], pair.document, pair.instruction, forced=program, speculative_headers=False)
        assert on.output_ids == off.output_ids and on.text == off.text == pair.gold
        assert on.stats.forwards <= off.stats.forwards
        on_total += on.stats.forwards
        off_total += off.stats.forwards
    assert on_total < off_total


class _Oracle:
    """A draft proposer that proposes the forced target (perfect drafts) or junk."""

    def __init__(self, target, junk=False):
        self.target, self.junk, self.updates = target, junk, []

    def propose(self, context_ids, generated):
        if self.junk:
            return [5, 6, 7]
        pos = len(context_ids) - self.prompt_len
        return self.target[pos:pos + 4]

    def update(self, accepted):
        self.updates.append(accepted)


def test_gen_drafter_hook_is_lossless(tiny_model):
    from engine.guide.tokens import program_token_ids

    pair = load_pairs("python")[1]
    program = line_program(pair.document, pair.gold)
    prompt = render_prompt(pair.document, pair.instruction, tiny_model.tokenizer)
    target = program_token_ids(token_table(tiny_model.tokenizer), prompt.view, program)
    base = _run(tiny_model, pair.document, pair.instruction, forced=program)
    for junk in (False, True):
        strat = _Oracle(target, junk=junk)
        strat.prompt_len = len(prompt.ids)
        res = _run(tiny_model, pair.document, pair.instruction, forced=program, drafter=strat)
        assert res.output_ids == base.output_ids and res.text == pair.gold
        assert strat.updates
        if not junk:
            assert res.stats.forwards < base.stats.forwards and res.stats.draft_accepted > 0
    free = _run(tiny_model, pair.document, pair.instruction, max_new_tokens=40)
    junk = _Oracle(target, junk=True)
    junk.prompt_len = len(prompt.ids)
    spec = _run(tiny_model, pair.document, pair.instruction, max_new_tokens=40, drafter=junk)
    assert spec.output_ids == free.output_ids


def _script_for(loaded, document, wanted, after_gen_close=None):
    tok = loaded.tokenizer
    prompt_len = len(render_prompt(document, "Fix bugs.", tok).ids)

    def script(prefix):
        out = prefix[prompt_len:]
        if len(out) < len(wanted) and out == wanted[:len(out)]:
            return wanted[len(out)]
        if after_gen_close is not None and decode(tok, out).endswith("</gen>"):
            return after_gen_close
        return None

    return script


def test_gen_end_detection_is_robust_to_splits_and_overshoot(tiny_model, scripted):
    tok = tiny_model.tokenizer
    table = token_table(tok)
    body = "\nx </div> <generic> a </ b </gen\n"
    lt_slash, gen, gt_lt = (tok.convert_tokens_to_ids(t) for t in ("</", "gen", "><"))
    assert tok.decode([lt_slash, gen, gt_lt]) == "</gen><"
    wanted = [*table.gen_open, *tok.encode(body, add_special_tokens=False), lt_slash, gen, gt_lt]
    doc = "a\nb\nc"
    model = scripted(tiny_model, _script_for(tiny_model, doc, wanted, after_gen_close=lt_slash))
    res = _run(model, doc, max_new_tokens=80)
    assert res.program == (Gen(body),)
    assert not res.stats.truncated
    assert decode(tok, res.output_ids) == "<gen>" + body + "</gen></program>"
    assert res.output_ids[-len(table.gen_close) - len(table.program_close):] == [*table.gen_close, *table.program_close]


def test_eos_inside_gen_closes_the_program(tiny_model, scripted):
    tok = tiny_model.tokenizer
    table = token_table(tok)
    wanted = [*table.gen_open, *tok.encode("\nabc\n", add_special_tokens=False), tok.eos_token_id]
    doc = "a\nb"
    res = _run(scripted(tiny_model, _script_for(tiny_model, doc, wanted)), doc, max_new_tokens=50)
    assert res.program == (Gen("\nabc\n"),) and res.text == "abc"
    assert not res.stats.truncated
    assert decode(tok, res.output_ids) == "<gen>\nabc\n</gen></program>"


def test_token_budget_truncates_cleanly(tiny_model, scripted):
    tok = tiny_model.tokenizer
    table = token_table(tok)
    wanted = [*table.gen_open, *tok.encode("\n" + "word " * 40, add_special_tokens=False)]
    doc = "a\nb"
    res = _run(scripted(tiny_model, _script_for(tiny_model, doc, wanted)), doc, max_new_tokens=12)
    assert res.stats.truncated
    assert res.stats.decoded_tokens + res.stats.forced_tokens <= 12
    assert len(res.program) == 1 and res.program[0].text.startswith("\nword word")


def test_cancellation_stops_within_one_forward(tiny_model):
    cancel = threading.Event()
    seen = []

    def progress(p):
        seen.append(p.forwards)
        if p.forwards == 3:
            cancel.set()

    pair = load_pairs("python")[0]
    with pytest.raises(EditCancelled, match="cancelled"):
        decode_program(tiny_model, pair.document, pair.instruction, forced=line_program(pair.document, pair.gold),
                       cancel=cancel, progress=progress)
    assert seen == [1, 2, 3]


def test_context_overflow_is_reported_before_decoding(tiny_model):
    small = dataclasses.replace(tiny_model, context_length=400)
    calls = []
    with pytest.raises(ContextOverflowError, match="range") as info:
        decode_program(small, "x = 1\n" * 200, "Fix.", progress=calls.append)
    assert calls == [] and info.value.context_length == 400


def test_filling_the_context_window_truncates_cleanly(tiny_model):
    doc = "".join(f"line {k} = {k * k}\n" for k in range(30))
    prompt = render_prompt(doc, "Fix bugs.", tiny_model.tokenizer)
    room = len(prompt.ids) + prompt.view.n_tokens + 40
    small = dataclasses.replace(tiny_model, context_length=room)
    n = len(doc.split("\n"))
    for spec in (True, False):
        res = _run(small, doc, forced=(CopyLines(1, n), CopyLines(1, n), CopyLines(1, n)), speculative_headers=spec)
        assert res.stats.truncated
        assert res.program[0] == CopyLines(1, n) and len(res.program) <= 2  # the third copy never starts
        assert len(prompt.ids) + len(res.output_ids) <= room


def test_split_literal_tokenizer_decodes_and_replays(char_model):
    tok = char_model.tokenizer
    rng = random.Random(2)
    for k in range(6):
        doc = _random_document(rng)
        res = _run(char_model, doc, max_new_tokens=60, speculative_headers=k % 2 == 0)
        _check_program(res, doc, token_level=False, n_tokens=0)
    doc = "def f(x):\n    return x - 1\n\nprint(f(123))\n"
    gold = "def f(x):\n    return x + 1\n\nprint(f(123))\n"
    program = line_program(doc, gold)
    for spec in (True, False):
        res = _run(char_model, doc, forced=program, speculative_headers=spec)
        assert res.program == program and res.text == gold
        assert decode(tok, res.output_ids) == expanded_program_text(program, doc)[len(PROGRAM_OPEN):]


@pytest.mark.real_model
def test_real_model_programs_parse_on_humanevalpack(real_model):
    pairs = _sample_pairs(10, 10)
    for k, pair in enumerate(pairs):
        res = _run(real_model, pair.document, pair.instruction, max_new_tokens=64)
        _check_program(res, pair.document, token_level=False, n_tokens=0)
        if k < 2:  # speculative headers are lossless on the real model too
            off = _run(real_model, pair.document, pair.instruction, max_new_tokens=64, speculative_headers=False)
            assert off.output_ids == res.output_ids and off.stats.forwards >= res.stats.forwards


@pytest.mark.real_model
def test_real_model_forced_oracle_reproduces_gold(real_model):
    for pair in _sample_pairs(1, 1):
        program = line_program(pair.document, pair.gold)
        res = _run(real_model, pair.document, pair.instruction, forced=program)
        assert res.program == program and res.text == pair.gold


def test_a_gen_that_loops_is_stopped_long_before_the_budget(tiny_model, scripted):
    tok = tiny_model.tokenizer
    table = token_table(tok)
    line = tok.encode("    total = total + 1\n", add_special_tokens=False)
    wanted = [*table.gen_open, *tok.encode("\n", add_special_tokens=False), *line * 200]
    doc = "a\nb"
    res = _run(scripted(tiny_model, _script_for(tiny_model, doc, wanted)), doc, max_new_tokens=2000)
    assert res.stats.truncated and res.stats.repeating
    assert res.stats.decoded_tokens < 300           # stopped after a few repeats, not at 2000
    assert res.program[0].text.count("total = total + 1") >= 8


def test_a_long_guessed_payload_is_verified_as_a_header_alone(tiny_model):
    """A guessed copy whose payload exceeds ``guess_payload_cap`` is fed as its header only (the payload
    rides along with the next forward): fewer guessed tokens, the same output."""
    for pair in _sample_pairs(2, 2):
        program = line_program(pair.document, pair.gold)
        whole = _run(tiny_model, pair.document, pair.instruction, forced=program, guess_payload_cap=10**6)
        capped = _run(tiny_model, pair.document, pair.instruction, forced=program, guess_payload_cap=0)
        assert capped.output_ids == whole.output_ids and capped.text == whole.text == pair.gold
        assert capped.stats.guess_tokens < whole.stats.guess_tokens
        noop = (CopyLines(1, render_prompt(pair.document, "", tiny_model.tokenizer).view.n_lines),)
        a = _run(tiny_model, pair.document, pair.instruction, forced=noop, guess_payload_cap=10**6)
        b = _run(tiny_model, pair.document, pair.instruction, forced=noop, guess_payload_cap=0)
        assert a.output_ids == b.output_ids and a.text == b.text == pair.document
        assert b.stats.forwards == a.stats.forwards + 1   # a right guess: its payload costs one more forward
