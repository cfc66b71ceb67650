"""Generated text follows a CRLF document's line endings (engine.program.eol)."""
from engine.program.eol import adapt_program, adapt_text, uses_crlf
from engine.program.grammar import CopyLines, Gen
from engine.program.resolver import resolve

DOC = "def f(x):\r\n    return x - 1\r\n\r\nprint(f(2))\r\n"


def test_detects_crlf_only_when_every_break_is_crlf():
    assert uses_crlf(DOC)
    assert not uses_crlf("a\nb\r\n")
    assert not uses_crlf("single line")
    assert not uses_crlf("")


def test_line_program_gen_gets_crlf_and_copies_stay_verbatim():
    program = (CopyLines(1, 1), Gen("\n    return x + 1\n"), CopyLines(3, 5))
    text = resolve(adapt_program(program, DOC), DOC).text
    assert text == "def f(x):\r\n    return x + 1\r\n\r\nprint(f(2))\r\n"
    assert "\n" not in text.replace("\r\n", "")


def test_final_gen_does_not_end_the_document_with_a_lone_cr():
    program = (CopyLines(1, 3), Gen("\nprint(f(3))\n"))
    text = resolve(adapt_program(program, "a\r\nb\r\n\r\nold"), "a\r\nb\r\n\r\nold").text
    assert text == "a\r\nb\r\n\r\nprint(f(3))"


def test_lf_documents_are_untouched():
    program = (CopyLines(1, 1), Gen("\nx\n"))
    assert adapt_program(program, "a\nb\n") == program
    assert adapt_text("a\nb\n", "a\nb\n") == "a\nb\n"


def test_token_program_and_regen_text():
    assert adapt_program((Gen("x\ny"),), DOC, token_level=True) == (Gen("x\r\ny"),)
    assert adapt_text("a\nb\r\nc\n", DOC) == "a\r\nb\r\nc\r\n"


def test_engine_edits_of_a_crlf_document_keep_crlf(tiny_model):
    """Every strategy's result for a CRLF document has no bare LF (tiny model writes arbitrary text)."""
    from engine.api import EditEngine, EditRequest

    engine = EditEngine(tiny_model)
    for strategy in ("cad", "cad-tokens", "regen"):
        result = engine.edit(EditRequest(DOC, "Fix the bug.", strategy=strategy, max_new_tokens=24))
        assert "\n" not in result.text.replace("\r\n", ""), (strategy, result.text)
        if strategy != "cad-tokens":
            assert resolve(result.program, DOC).text == result.text
