"""engine.guide.fsm: token table from the tokenizer, index masks within bounds, trie branching, forcing."""
from __future__ import annotations

import random

import pytest

from engine.guide.fsm import ProgramFSM
from engine.guide.tokens import TokenTable, op_token_ids, program_token_ids, token_table
from engine.program.grammar import CopyLines, CopyTokens, Gen
from engine.prompt import DocumentView


def _valid_numbers_prefixes(lo, hi):
    """Brute force: all digit-string prefixes of numbers in [lo, hi] -> (prefixes, complete numbers)."""
    prefixes, complete = set(), set()
    for v in range(max(lo, 0), hi + 1):
        s = str(v)
        complete.add(s)
        for k in range(1, len(s) + 1):
            prefixes.add(s[:k])
    return prefixes, complete


@pytest.mark.parametrize("tok_fixture", ["real_tokenizer", "char_tokenizer"])
def test_digit_mask_matches_brute_force(tok_fixture, request):
    table = token_table(request.getfixturevalue(tok_fixture))
    rng = random.Random(0)
    cases = [(1, 1), (1, 9), (1, 10), (0, 0), (0, 12), (5, 130), (12, 12), (100, 1234)]
    cases += [(a, a + rng.randint(0, 300)) for a in (rng.randint(0, 400) for _ in range(20))]
    for lo, hi in cases:
        prefixes, _ = _valid_numbers_prefixes(lo, hi)
        for prefix in [""] + sorted(prefixes, key=len)[:40]:
            mask = table.digit_mask(prefix, lo, hi)
            got = {table.digit_strs[i] for i in range(len(mask)) if mask[i]}
            want = {s for s in set(table.digit_strs) if prefix + s in prefixes}
            assert got == want, (prefix, lo, hi)


def test_token_table_is_built_from_the_tokenizer(real_tokenizer, char_tokenizer):
    for tok in (real_tokenizer, char_tokenizer):
        table = token_table(tok)
        assert token_table(tok) is table  # cached once per tokenizer
        for ids, text in [(table.gen_close, "</gen>"), (table.copy_lines_open, '<copy lines="'),
                          (table.program_close, "</program>"), (table.copy_close, '"/>')]:
            assert tok.decode(list(ids)) == text
    split = token_table(char_tokenizer)
    assert len(split.gen_close) >= 3 and len(split.copy_lines_open) >= 8  # literals really split
    assert {"12", "123"} <= set(split.digit_strs)  # multi-digit tokens found by the vocab scan


def _walk(fsm, ids):
    """Advance through ids checking every token is legal; return (#choose steps, #forced tokens)."""
    chooses = forced = 0
    for t in ids:
        st = fsm.step()
        assert st.kind in ("force", "choose"), st
        assert fsm.allows(t), (t, fsm.state)
        if st.kind == "choose":
            chooses += 1
            assert len(st.allowed) > 1  # a decision with one option would be forced instead
        else:
            forced += 1
        fsm.advance(t)
    return chooses, forced


def _gen_walk(fsm, table, tok, text):
    body = tok.encode(text, add_special_tokens=False)
    assert fsm.step().kind == "free"
    fsm.finish_gen(tok.decode(body))


def _random_program(rng, n_lines):
    ops, prev = [], None
    for _ in range(rng.randint(1, 5)):
        if rng.random() < 0.6:
            i = rng.randint(1, n_lines)
            ops.append(CopyLines(i, rng.randint(i, n_lines)))
        elif prev is None or not isinstance(prev, Gen):
            ops.append(Gen(rng.choice(["\n  x = 1\n", "</div> <generic>", "a </ b\n", "\n"])))
        prev = ops[-1] if ops else None
    return tuple(ops) or (CopyLines(1, n_lines),)


@pytest.mark.parametrize("tok_fixture", ["real_tokenizer", "char_tokenizer"])
def test_random_programs_walk_the_fsm(tok_fixture, request):
    tok = request.getfixturevalue(tok_fixture)
    table = token_table(tok)
    rng = random.Random(1)
    for n_lines in [1, 2, 9, 10, 11, 99, 100, 123, 250]:
        view = DocumentView("\n".join(f"line {k}" for k in range(1, n_lines + 1)), tok)
        for _ in range(6):
            program = _random_program(rng, n_lines)
            fsm = ProgramFSM(table, view)
            for op in program:
                assert fsm.at_op_start
                if isinstance(op, Gen):
                    _walk(fsm, table.gen_open)
                    _gen_walk(fsm, table, tok, op.text)
                else:
                    _walk(fsm, op_token_ids(table, view, op))
            _walk(fsm, table.program_close)
            assert fsm.step().kind == "done"
            assert [o for o in fsm.ops if not isinstance(o, Gen)] == [o for o in program if not isinstance(o, Gen)]


def test_line_indices_are_bounded_to_the_document(real_tokenizer):
    table = token_table(real_tokenizer)
    view = DocumentView("\n".join("x" * 12), real_tokenizer)  # 12 lines
    fsm = ProgramFSM(table, view)
    for t in table.copy_lines_open:
        fsm.advance(t)
    digit = {s: i for i, s in zip(table.digit_ids.tolist(), table.digit_strs)}
    assert not fsm.allows(digit["0"])  # lines are 1-based: no 0, no leading zero
    fsm.advance(digit["1"])
    assert fsm.allows(digit["2"]) and not fsm.allows(digit["3"])  # 12 ok, 13 > n
    fsm.advance(digit["2"])
    st = fsm.step()
    assert st.kind == "force" and st.ids == (table.range_sep[0],)  # "12" is complete: '-' forced
    fsm.advance(table.range_sep[0])
    st = fsm.step()
    assert st.kind == "force" and st.ids == (digit["1"],)  # j >= 12 leaves "1" then "2" only
    fsm.advance(digit["1"])
    fsm.advance(digit["2"])
    assert fsm.step().ids[:len(table.copy_close)] == table.copy_close
    with pytest.raises(ValueError):
        ProgramFSM(table, view).advance(digit["1"])  # not a legal first token


def test_end_must_not_precede_start(real_tokenizer):
    table = token_table(real_tokenizer)
    view = DocumentView("\n".join("abcdefghi"), real_tokenizer)  # 9 lines
    fsm = ProgramFSM(table, view)
    digit = {s: i for i, s in zip(table.digit_ids.tolist(), table.digit_strs)}
    for t in [*table.copy_lines_open, digit["5"], *table.range_sep]:
        fsm.advance(t)
    st = fsm.step()
    assert sorted(real_tokenizer.decode([int(i)]) for i in st.allowed) == ["5", "6", "7", "8", "9"]


def test_single_line_document_copy_is_fully_forced(real_tokenizer):
    table = token_table(real_tokenizer)
    view = DocumentView("only line", real_tokenizer)
    fsm = ProgramFSM(table, view)
    for t in table.copy_lines_open:
        fsm.advance(t)
    chooses, forced = _walk(fsm, op_token_ids(table, view, CopyLines(1, 1))[len(table.copy_lines_open):])
    assert chooses == 0 and forced > 0
    assert fsm.ops == [CopyLines(1, 1)]


def test_monotonic_requires_increasing_copies(real_tokenizer):
    table = token_table(real_tokenizer)
    view = DocumentView("\n".join("abcdef"), real_tokenizer)  # 6 lines
    fsm = ProgramFSM(table, view, monotonic=True)
    _walk(fsm, op_token_ids(table, view, CopyLines(1, 3)))
    clone = fsm.clone()
    with pytest.raises(AssertionError):
        _walk(clone, op_token_ids(table, view, CopyLines(3, 4)))
    _walk(fsm, op_token_ids(table, view, CopyLines(4, 6)))
    # nothing left to copy: no copy tag can even start, while gen and close still can
    assert not _legal(fsm, table.copy_lines_open)
    assert _legal(fsm, table.gen_open) and _legal(fsm, table.program_close)


def _legal(fsm, ids) -> bool:
    clone = fsm.clone()
    for t in ids:
        if not clone.allows(t):
            return False
        clone.advance(t)
    return True


def test_first_op_cannot_close_the_program(real_tokenizer, char_tokenizer):
    for tok in (real_tokenizer, char_tokenizer):
        table = token_table(tok)
        fsm = ProgramFSM(table, DocumentView("a\nb", tok))
        assert not _legal(fsm, table.program_close)
        assert _legal(fsm, table.gen_open) and _legal(fsm, table.copy_lines_open)


def test_token_level_bounds(real_tokenizer):
    table = token_table(real_tokenizer)
    view = DocumentView("def f(x):\n    return x\n", real_tokenizer)
    n = view.n_tokens
    fsm = ProgramFSM(table, view, token_level=True)
    ids = op_token_ids(table, view, CopyTokens(0, n - 1), token_level=True)
    _walk(fsm, ids)
    assert fsm.ops == [CopyTokens(0, n - 1)]
    assert ids[-n:] == view.token_ids  # the splice is the document's own ids
    bad = ProgramFSM(table, view, token_level=True)
    _walk(bad, [*table.copy_tokens_open, *table.number_ids(0), *table.range_sep])
    assert bad.allows(table.number_ids(n - 1)[0])
    assert not bad.allows(table.number_ids(n)[0])  # b < n_tokens (n = 9 here: one digit)


def test_program_token_ids_end_with_close(real_tokenizer):
    table = token_table(real_tokenizer)
    view = DocumentView("a\nb\nc", real_tokenizer)
    ids = program_token_ids(table, view, (CopyLines(1, 2), Gen("\nz\n")))
    assert real_tokenizer.decode(ids).endswith("\nz\n</gen></program>")


def test_tokenizer_without_digits_is_rejected():
    class NoDigits:
        all_special_ids: list[int] = []
        eos_token_id = None

        def __len__(self):
            return 3

        def encode(self, text, add_special_tokens=False):
            return [0] * len(text)

        def decode(self, ids, **kw):
            return "<copy" if len(ids) > 1 else "x"

    with pytest.raises(ValueError, match="reversibly|digit"):
        TokenTable(NoDigits())
