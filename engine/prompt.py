"""The ONE renderer of the model's context, and the exact bytes the decoder splices for copies.

Owns:

* ``render_prompt(document, instruction, tokenizer, *, token_level=False, profile="teach")``: chat
  template (``tokenizer.apply_chat_template``; a plain fallback for tokenizers without one) with a
  system prompt chosen by the *prompt profile* (``PROMPT_PROFILES``): ``"teach"`` explains the
  grammar with a worked example (for models never trained on it), ``"short"`` states it in a few
  lines (for weights fine-tuned on this project's programs; the profile is recorded with the
  weights, see ``engine.backends.model``), the document shown with line numbers
  (``"7| text"``) or, for token copies, with each line prefixed by a token index (below), the
  instruction, and the assistant turn opened with ``<program>`` (``PROGRAM_OPEN``).
* ``render_regen_prompt(document, instruction, tokenizer)``: the full-regeneration prompt (no
  line numbers; the assistant turn is opened with ``REGEN_OPEN``). Output framing: the model
  writes the whole edited document and then ``REGEN_CLOSE``; stop when the decoded output contains
  ``REGEN_CLOSE`` or at EOS. ``regen_output(decoded)`` applies exactly that rule.
* The splice payloads. Line copies: after the tag ``<copy lines="i-j"/>`` the decoder appends the
  tokens of ``copy_payload_text(lines, i, j) = "\\n" + "\\n".join(lines[i-1:j]) + "\\n"``
  (tokenized on its own, so the next op tag starts on a fresh line). Token copies: after
  ``<copy tokens="a-b"/>`` the decoder appends the document's own ids ``doc_ids[a:b+1]``
  unchanged (no framing, no re-tokenization). ``expanded_program_text`` renders a line program
  the way the model sees it in its own output (tags followed by their payloads); training
  targets must use it.
* ``DocumentView``: the line and token views of a document the decoder and FSM need
  (``lines``, ``n_lines``, ``token_ids``, ``payload_ids(i, j)``).

Token view display (token_level=True): the document is shown line by line; each line is prefixed
by the index of the first document token that starts inside that line (or, when no token starts
there, the token covering its first character), e.g. ``"[12] return a + b"``. The total number of
tokens is stated, so the model can address ``0 <= a <= b < n_tokens``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from engine.errors import ContextOverflowError
from engine.program.grammar import (
    COPY_CLOSE, COPY_LINES_OPEN, GEN_CLOSE, GEN_OPEN, PROGRAM_CLOSE, PROGRAM_OPEN, RANGE_SEP, CopyLines,
    CopyTokens, Gen, escape,
)
from engine.program.resolver import document_lines

REGEN_OPEN = "<document>\n"
REGEN_CLOSE = "\n</document>"

_LINES_SYSTEM = """You edit a document by writing a short edit program instead of rewriting the document.
The program starts with <program> and ends with </program>. It has two kinds of ops:
<copy lines="i-j"/> copies lines i to j (inclusive, numbered as shown) of the document unchanged; the copied lines then appear after the tag.
<gen>
new text
</gen> writes new lines that are not in the document.
Copy every line that stays the same and generate only the lines that change. Never write the line numbers.

Example.
Document:
{example_doc}

Instruction: {example_instruction}
Answer:
{example_answer}"""

_TOKENS_SYSTEM = """You edit a document by writing a short edit program instead of rewriting the document.
The document is split into tokens numbered from 0; each shown line starts with [k], the number of its first token.
The program starts with <program> and ends with </program>. It has two kinds of ops:
<copy tokens="a-b"/> copies tokens a to b (inclusive) of the document unchanged; the copied text then appears after the tag.
<gen>new text</gen> writes text that is not in the document, exactly as written (include line breaks yourself).
Copy everything that stays the same and generate only what changes."""

_SHORT_LINES_SYSTEM = (
    "Edit the numbered document by writing an edit program. "
    '<copy lines="i-j"/> keeps lines i to j unchanged; <gen>\nnew lines\n</gen> writes new lines. '
    "Copy every unchanged line, generate only the lines that change, and end with </program>."
)

_SHORT_TOKENS_SYSTEM = (
    "Edit the document by writing an edit program. Each shown line starts with [k], the index of "
    'its first token. <copy tokens="a-b"/> keeps tokens a to b unchanged; <gen>text</gen> writes new '
    "text exactly as given. Copy everything unchanged and end with </program>."
)

PROMPT_PROFILES = ("teach", "short")
DEFAULT_PROFILE = "teach"

_EXAMPLE_DOC = 'def add(a, b):\n    """Return the sum of a and b."""\n    return a - b\n'
_EXAMPLE_INSTRUCTION = "Fix bugs in add."
_EXAMPLE_PROGRAM = (CopyLines(1, 2), Gen("\n    return a + b\n"), CopyLines(4, 4))


def number_lines(document: str) -> str:
    """The document as shown to the model: ``"k| line"`` per line (CR at line ends not shown)."""
    return "\n".join(f"{k}| {line.rstrip(chr(13))}" for k, line in enumerate(document_lines(document), 1))


def copy_payload_text(lines: list[str], start: int, end: int) -> str:
    """Text spliced after ``<copy lines="start-end"/>``: newline, the lines, newline."""
    if not 1 <= start <= end <= len(lines):
        raise ValueError(f"copy lines {start}-{end} outside the document's 1..{len(lines)} lines")
    return "\n" + "\n".join(lines[start - 1:end]) + "\n"


def document_token_ids(tokenizer, document: str) -> list[int]:
    """The document's token ids (no special tokens); token copies index into this list."""
    return list(tokenizer.encode(document, add_special_tokens=False))


def _token_offsets(tokenizer, document: str, ids: list[int]) -> list[tuple[int, int]]:
    """Character span of each document token (offsets mapping, else cumulative decoding)."""
    try:
        enc = tokenizer(document, add_special_tokens=False, return_offsets_mapping=True)
        if list(enc["input_ids"]) == ids:
            return [tuple(o) for o in enc["offset_mapping"]]
    except (NotImplementedError, TypeError, ValueError, KeyError):
        pass
    spans, pos = [], 0
    for k in range(len(ids)):
        end = len(tokenizer.decode(ids[: k + 1]))
        spans.append((pos, max(pos, end)))
        pos = max(pos, end)
    return spans


def number_tokens(tokenizer, document: str, ids: list[int] | None = None) -> str:
    """The document shown for token copies: each line prefixed by ``[k]`` (see module doc)."""
    if ids is None:
        ids = document_token_ids(tokenizer, document)
    offsets = _token_offsets(tokenizer, document, ids)
    rows, line_start = [], 0
    k = 0
    for line in document_lines(document):
        line_end = line_start + len(line)
        while k < len(offsets) and offsets[k][1] <= line_start and offsets[k][0] < line_start:
            k += 1  # tokens that end before this line
        first = next((t for t in range(k, len(offsets)) if offsets[t][0] >= line_start), None)
        if first is None or offsets[first][0] > line_end:
            cover = next((t for t in range(max(0, k - 1), len(offsets))
                          if offsets[t][0] <= line_start < max(offsets[t][1], offsets[t][0] + 1)), None)
            first = cover if cover is not None else first
        label = f"[{first}]" if first is not None else "[-]"
        rows.append(f"{label} {line.rstrip(chr(13))}")
        line_start = line_end + 1
    return "\n".join(rows)


def expanded_program_text(program, document: str) -> str:
    """A line program as the model sees it in its own output: each copy tag followed by its payload."""
    lines = document_lines(document)
    parts = [PROGRAM_OPEN]
    for op in program:
        if isinstance(op, CopyLines):
            parts.append(f"{COPY_LINES_OPEN}{op.start}{RANGE_SEP}{op.end}{COPY_CLOSE}")
            parts.append(copy_payload_text(lines, op.start, op.end))
        elif isinstance(op, Gen):
            parts.append(f"{GEN_OPEN}{escape(op.text)}{GEN_CLOSE}")
        elif isinstance(op, CopyTokens):
            raise ValueError("expanded_program_text renders line programs; token copies splice ids")
        else:
            raise TypeError(f"not a program op: {op!r}")
    parts.append(PROGRAM_CLOSE)
    return "".join(parts)


@dataclass
class DocumentView:
    """Line and token views of the document being edited (what the FSM bounds and splices use)."""

    document: str
    tokenizer: object = field(repr=False)
    lines: list[str] = field(init=False)
    token_ids: list[int] = field(init=False)
    _payload_cache: dict = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        self.lines = document_lines(self.document)
        self.token_ids = document_token_ids(self.tokenizer, self.document)

    @property
    def n_lines(self) -> int:
        return len(self.lines)

    @property
    def n_tokens(self) -> int:
        return len(self.token_ids)

    def payload_ids(self, start: int, end: int, *, token_level: bool = False) -> list[int]:
        """Ids spliced after a copy tag: tokenized line payload, or the document's own token ids."""
        if token_level:
            if not 0 <= start <= end < self.n_tokens:
                raise ValueError(f"copy tokens {start}-{end} outside the document's 0..{self.n_tokens - 1}")
            return self.token_ids[start:end + 1]
        key = (start, end)
        ids = self._payload_cache.get(key)
        if ids is None:
            ids = list(self.tokenizer.encode(copy_payload_text(self.lines, start, end), add_special_tokens=False))
            self._payload_cache[key] = ids
        return ids


@dataclass
class RenderedPrompt:
    """A rendered context: its text, its token ids, and the document view it shows."""

    text: str
    ids: list[int]
    view: DocumentView
    token_level: bool


def _chat(tokenizer, system: str, user: str, assistant_open: str) -> str:
    messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    if getattr(tokenizer, "chat_template", None):
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    else:  # tokenizers without a template (tests): a plain, documented layout
        text = f"System: {system}\n\nUser: {user}\n\nAssistant: "
    return text + assistant_open


def _encode(tokenizer, text: str) -> list[int]:
    return list(tokenizer.encode(text, add_special_tokens=False))


def _default_tokenizer(tokenizer):
    if tokenizer is not None:
        return tokenizer
    from engine.backends.model import load_tokenizer

    return load_tokenizer("default")


def check_profile(profile: str) -> str:
    """Return ``profile`` if it is a known prompt profile, else raise ValueError naming the choices."""
    if profile not in PROMPT_PROFILES:
        raise ValueError(f"unknown prompt profile {profile!r}; choose one of {', '.join(PROMPT_PROFILES)}")
    return profile


def system_prompt(token_level: bool = False, profile: str = DEFAULT_PROFILE) -> str:
    """The system prompt of a profile: ``teach`` has a worked example (line copies), ``short`` does not."""
    if check_profile(profile) == "short":
        return _SHORT_TOKENS_SYSTEM if token_level else _SHORT_LINES_SYSTEM
    if token_level:
        return _TOKENS_SYSTEM
    return _LINES_SYSTEM.format(
        example_doc=number_lines(_EXAMPLE_DOC),
        example_instruction=_EXAMPLE_INSTRUCTION,
        example_answer=expanded_program_text(_EXAMPLE_PROGRAM, _EXAMPLE_DOC),
    )


def render_prompt(document: str, instruction: str, tokenizer=None, *, token_level: bool = False,
                  profile: str = DEFAULT_PROFILE) -> RenderedPrompt:
    """Render the Copy-as-Decode context; the assistant turn ends with ``<program>``."""
    tokenizer = _default_tokenizer(tokenizer)
    view = DocumentView(document, tokenizer)
    if token_level:
        shown = number_tokens(tokenizer, document, view.token_ids)
        user = f"Document ({view.n_tokens} tokens):\n{shown}\n\nInstruction: {instruction}"
    else:
        user = f"Document:\n{number_lines(document)}\n\nInstruction: {instruction}"
    text = _chat(tokenizer, system_prompt(token_level, profile), user, PROGRAM_OPEN)
    return RenderedPrompt(text=text, ids=_encode(tokenizer, text), view=view, token_level=token_level)


_REGEN_SYSTEM = (
    "You edit documents. Reply with the complete edited document between <document> and "
    "</document>, changing only what the instruction asks and keeping everything else exactly."
)


def render_regen_prompt(document: str, instruction: str, tokenizer=None) -> RenderedPrompt:
    """Render the full-regeneration context; the assistant turn ends with ``REGEN_OPEN``.

    The document is shown verbatim between ``<document>`` lines (no numbers), so a drafter can
    copy from it token for token. The answer is complete when ``REGEN_CLOSE`` appears (or EOS).
    """
    tokenizer = _default_tokenizer(tokenizer)
    user = f"Document:\n{REGEN_OPEN}{document}{REGEN_CLOSE}\n\nInstruction: {instruction}"
    text = _chat(tokenizer, _REGEN_SYSTEM, user, REGEN_OPEN)
    return RenderedPrompt(text=text, ids=_encode(tokenizer, text), view=DocumentView(document, tokenizer),
                          token_level=False)


def regen_output(decoded: str) -> tuple[str, bool]:
    """Split decoded regen output at ``REGEN_CLOSE``: (edited document, whether it was closed)."""
    cut = decoded.find(REGEN_CLOSE)
    if cut < 0:
        return decoded, False
    return decoded[:cut], True


ANSWER_RESERVE = 16  # tokens kept free beyond a full copy of the document when checking the prompt


def check_context(prompt_tokens: int, document_tokens: int, context_length: int) -> None:
    """Raise ContextOverflowError if the prompt plus a full copy of the document cannot fit (the one
    rule of the in-process decoder and the remote client alike)."""
    reserve = document_tokens + ANSWER_RESERVE
    if prompt_tokens + reserve > context_length:
        raise ContextOverflowError(prompt_tokens, context_length, reserve)
