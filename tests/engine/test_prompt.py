"""engine.prompt: the rendered context, the splice payload framing, the token view, the regen prompt."""
from __future__ import annotations

from engine.program.grammar import CopyLines, Gen
from engine.prompt import (
    PROGRAM_OPEN, REGEN_CLOSE, REGEN_OPEN, DocumentView, copy_payload_text, expanded_program_text,
    number_lines, number_tokens, regen_output, render_prompt, render_regen_prompt, system_prompt,
)
from engine.program.resolver import resolve

DOC = "def f(x):\n    y = x\n    return y - 1\n"


def test_prompt_shows_numbered_document_and_opens_program(real_tokenizer):
    p = render_prompt(DOC, "Fix bugs in f.", real_tokenizer)
    assert p.text.endswith("<|im_start|>assistant\n" + PROGRAM_OPEN)
    assert "1| def f(x):\n2|     y = x\n3|     return y - 1\n4| " in p.text
    assert "Fix bugs in f." in p.text
    assert p.ids == real_tokenizer.encode(p.text, add_special_tokens=False)
    assert p.view.n_lines == 4 and p.view.lines[2] == "    return y - 1"


def test_system_prompt_example_is_a_valid_program():
    example_doc = 'def add(a, b):\n    """Return the sum of a and b."""\n    return a - b\n'
    shown = system_prompt()
    assert number_lines(example_doc) in shown
    program = (CopyLines(1, 2), Gen("\n    return a + b\n"), CopyLines(4, 4))
    assert expanded_program_text(program, example_doc) in shown
    assert resolve(program, example_doc).text == example_doc.replace("a - b", "a + b")


def test_copy_payload_framing_and_ids(real_tokenizer):
    lines = DOC.split("\n")
    assert copy_payload_text(lines, 2, 3) == "\n    y = x\n    return y - 1\n"
    view = DocumentView(DOC, real_tokenizer)
    assert real_tokenizer.decode(view.payload_ids(2, 3)) == "\n    y = x\n    return y - 1\n"
    assert view.payload_ids(0, 2, token_level=True) == view.token_ids[:3]


def test_expanded_program_is_tags_plus_payloads():
    text = expanded_program_text((CopyLines(1, 1), Gen("\n    return x\n"), CopyLines(4, 4)), DOC)
    assert text == '<program><copy lines="1-1"/>\ndef f(x):\n<gen>\n    return x\n</gen><copy lines="4-4"/>\n\n</program>'


def test_token_view_labels_address_the_line_starts(real_tokenizer):
    p = render_prompt(DOC, "Fix.", real_tokenizer, token_level=True)
    ids = p.view.token_ids
    assert f"Document ({len(ids)} tokens):" in p.text
    shown = number_tokens(real_tokenizer, DOC, ids).split("\n")
    assert len(shown) == 4
    for row, line in zip(shown, DOC.split("\n")):
        label, _, text = row.partition("] ")
        assert text == line
        if line.strip():
            k = int(label[1:])
            # the labelled token's text lies in this line (it starts inside it)
            assert real_tokenizer.decode([ids[k]]).strip() in line


def test_regen_prompt_framing(real_tokenizer):
    p = render_regen_prompt(DOC, "Fix bugs in f.", real_tokenizer)
    assert p.text.endswith(REGEN_OPEN)
    assert REGEN_OPEN + DOC + REGEN_CLOSE in p.text  # shown verbatim, no line numbers
    assert "1| " not in p.text
    assert regen_output("abc\n" + REGEN_CLOSE + "junk") == ("abc\n", True)
    assert regen_output("abc") == ("abc", False)


def test_prompt_without_chat_template(char_tokenizer):
    p = render_prompt("a\nb", "do it", char_tokenizer)
    assert p.text.startswith("System: ") and p.text.endswith("Assistant: " + PROGRAM_OPEN)
    assert char_tokenizer.decode(p.ids) == p.text
