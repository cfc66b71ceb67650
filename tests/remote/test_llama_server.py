"""The remote backend against a REAL llama.cpp server (started once per session, tests/remote/conftest.py)."""
from __future__ import annotations

import json
import re
import threading
import time

import pytest

from engine.api import EditEngine, EditRequest
from engine.errors import ContextOverflowError, EditCancelled
from engine.program.grammar import CopyLines
from engine.program.resolver import resolve
from engine.prompt import render_prompt
from engine.remote.errors import RemoteModelError
from engine.remote.gbnf import op_grammar, op_regex
from evaluation.corpus import data_dir

pytestmark = [pytest.mark.real_model]


def humaneval(k: int = 0):
    row = json.loads((data_dir() / "python.jsonl").read_text().splitlines()[k])
    return row["declaration"] + row["buggy_solution"], "Fix bugs in " + row["entry_point"] + "."


@pytest.fixture(scope="module")
def engine(llama_server):
    e = EditEngine(llama_server.spec)
    e.load()
    return e


def test_connects_and_discovers_the_served_model(engine, llama_server):
    server = engine.model.server
    assert (server.dialect, server.model, server.context_length) == ("llama.cpp", "smollm2-135m-cad", 8192)
    assert engine.model.prompt_profile == "short"
    assert EditEngine(llama_server.url).model.server.model == "smollm2-135m-cad"   # the only one served


def test_wrong_model_name_lists_what_is_served(llama_server):
    with pytest.raises(RemoteModelError, match="does not serve the model 'nope'.*smollm2-135m-cad"):
        EditEngine(f"{llama_server.url}#nope").load()


def test_grammar_constraint_bites(engine):
    """The same request unconstrained leaves the grammar; constrained it is forced into it, indices in bounds."""
    server, tok = engine.model.server, engine.model.tokenizer
    doc, instruction = humaneval(0)
    ids = render_prompt(doc, instruction, tok, profile="short").ids
    op = re.compile(op_regex(2, has_ops=False) + r"\Z")
    free = server.complete(ids, max_tokens=12)
    assert not op.match(free.text), free.text            # the model wants a copy of more than 2 lines
    bound = server.complete(ids, max_tokens=12, grammar=op_grammar(2, has_ops=False))
    assert op.match(bound.text), bound.text
    m = re.fullmatch(r'<copy lines="(\d+)-(\d+)"/>', bound.text)
    assert m is None or int(m.group(2)) <= 2
    chat = list(tok.encode("Write a haiku about the sea.", add_special_tokens=False))
    assert not op.match(server.complete(chat, max_tokens=8).text)
    assert op.match(server.complete(chat, max_tokens=12, grammar=op_grammar(2, has_ops=False)).text)


def test_cad_edit_matches_in_process_and_resolves(engine):
    doc, instruction = humaneval(0)
    result = engine.edit(EditRequest(doc, instruction, strategy="cad"))
    assert not result.stats.truncated
    assert result.text == resolve(result.program, doc, "clipped").text
    assert any(isinstance(op, CopyLines) for op in result.program)
    # one request per op header, one per gen body (+ a rare follow-up for an end before its start)
    gens = sum(1 for op in result.program if not isinstance(op, CopyLines))
    assert len(result.program) + 1 <= result.stats.forwards <= 2 * len(result.program) + gens + 1
    assert result.stats.copied_tokens > 0


def test_auto_runs_prompt_level_cad_and_says_why(engine):
    doc, instruction = humaneval(0)
    auto = engine.edit(EditRequest(doc, instruction, strategy="auto"))
    cad = engine.edit(EditRequest(doc, instruction, strategy="cad"))
    assert auto.stats.picked == "cad" and auto.stats.predicted_ms == {}
    assert (auto.text, auto.program) == (cad.text, cad.program) and cad.stats.picked == ""


def test_regen_is_one_request(engine):
    doc, instruction = humaneval(0)
    result = engine.edit(EditRequest(doc, instruction, strategy="regen", max_new_tokens=400))
    assert result.stats.forwards == 1
    assert result.text == resolve(result.program, doc, "strict").text


def test_budget_truncates_and_says_so(engine):
    doc, instruction = humaneval(0)
    result = engine.edit(EditRequest(doc, instruction, strategy="cad", max_new_tokens=6))
    assert result.stats.truncated and any("max_new_tokens=6" in w for w in result.warnings)


def test_range_scoped_edit_keeps_other_lines(engine):
    doc, instruction = humaneval(0)
    lines = doc.split("\n")
    result = engine.edit(EditRequest(doc, instruction, strategy="cad", line_range=(3, len(lines) - 1)))
    assert result.text.split("\n")[:2] == lines[:2]


def test_pasted_snippet_is_merged_without_a_request(engine):
    doc, _ = humaneval(0)
    snippet = ("Apply:\n```python\n            if idx != idx2:\n                distance = abs(elem - elem2)\n"
               "                # ... existing code ...\n```")
    before = engine.model.server.requests
    result = engine.edit(EditRequest(doc, snippet, strategy="cad"))
    assert result.stats.planner == "snippet-merge" and engine.model.server.requests == before
    assert result.text == doc.replace("distance = elem - elem2", "distance = abs(elem - elem2)")


def test_context_overflow_is_refused_before_any_request(engine):
    doc = "".join(f"value_{i} = {i} * {i} + {i}\n" for i in range(1500))
    before = engine.model.server.requests
    with pytest.raises(ContextOverflowError, match="range"):
        engine.edit(EditRequest(doc, "Rename value_1 to v1.", strategy="cad"))
    assert engine.model.server.requests == before


def test_cancel_aborts_the_in_flight_request(engine):
    # ~3,500 tokens: their prefill alone keeps the request in flight for seconds on a CPU server, whatever
    # the model then writes (a short document's regeneration can end by itself before the cancel)
    doc, k = "", 0
    while len(engine.model.tokenizer.encode(doc)) < 3500:
        doc, k = doc + humaneval(k)[0] + "\n\n", k + 1
    cancel = threading.Event()
    timer = threading.Timer(1.0, cancel.set)
    timer.start()
    t0 = time.monotonic()
    with pytest.raises(EditCancelled):
        engine.edit(EditRequest(doc, "Rewrite the whole file in great detail.", strategy="regen",
                                max_new_tokens=2000), cancel=cancel)
    assert time.monotonic() - t0 < 5.0
    # the server is still usable afterwards
    assert engine.model.server.complete([1, 2, 3], max_tokens=1).finish in ("stop", "length")


def test_warm_up_leaves_the_prompt_in_the_servers_cache(engine):
    """EditEngine.warm on a URL model: one one-token request; the edit's first request then finds the
    document's prompt in llama.cpp's slot cache and evaluates only what follows it."""
    from engine.warmup import instruction_free_prefix

    doc = "".join(f"def g{i}(x):\n    return x * {i}\n\n" for i in range(25))
    prefix = instruction_free_prefix(engine.model, doc, "cad")
    server = engine.model.server
    before = server.requests
    result = engine.warm(doc, "cad")
    assert result.status == "warm" and result.prompt_tokens == len(prefix) and server.requests == before + 1
    prompt = render_prompt(doc, "Fix g3.", engine.model.tokenizer, profile=engine.model.prompt_profile).ids
    assert prompt[:len(prefix)] == prefix
    done = server.complete(prompt, max_tokens=1)
    assert done.cached_tokens >= len(prefix) - 1  # llama.cpp re-evaluates at most the last cached token
    again = engine.warm(doc, "cad")
    assert again.status == "warm" and again.reused >= len(prefix) - 1
    edit = engine.edit(EditRequest(doc, "Fix g3.", strategy="cad", max_new_tokens=8))
    assert len(prefix) - 1 <= edit.stats.prompt_reused < edit.stats.prompt_tokens  # the server's own count


def test_fanout_levels_can_start_with_empty_prefix_caches(engine, llama_server):
    """benchmarks.remote.reset_prefix_caches erases llama.cpp's slots, so a fan-out level cannot find the
    previous level's prompts cached; the server's counters then show the whole prompt prefilled again."""
    from benchmarks.remote import _level_costs, reset_prefix_caches, server_metrics

    root = f"http://127.0.0.1:{llama_server.port}"
    ids = engine.model.tokenizer.encode("".join(f"def h{i}(y):\n    return y - {i}\n\n" for i in range(12)))
    server = engine.model.server
    server.complete(ids, max_tokens=1)
    assert server.complete(ids, max_tokens=1).cached_tokens >= len(ids) - 1
    assert reset_prefix_caches(root).endswith("slots erased")
    before = server_metrics(root)
    assert server.complete(ids, max_tokens=1).cached_tokens == 0
    costs = _level_costs(before, server_metrics(root))
    assert costs["prefill_tokens"] == len(ids) and costs["prefill_s"] > 0 and costs["decode_tokens"] <= 1
