"""A token-level decode resolves in token mode even when the program has no CopyTokens."""
from engine.decode.program import decode_program
from engine.program.grammar import Gen


def test_gen_only_token_program_keeps_its_newlines(tiny_model):
    forced = (Gen("\nreturn x\n"),)
    result = decode_program(tiny_model, "def f(x):\n    return x\n", "Rewrite.", token_level=True,
                            forced=forced, max_new_tokens=64)
    assert result.program == forced
    assert result.text == "\nreturn x\n"  # token mode: gen bodies are not stripped


def test_gen_only_line_program_strips_one_newline_each_side(tiny_model):
    forced = (Gen("\nreturn x\n"),)
    result = decode_program(tiny_model, "def f(x):\n    return x\n", "Rewrite.", forced=forced,
                            max_new_tokens=64)
    assert result.text == "return x"
