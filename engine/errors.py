"""Every error the engine raises on purpose, in one place (torch-free).

Every message says what went wrong, where, and what to do about it. ``EditCancelled`` is the ONE
cancellation type: the backend session raises it before the forward that would have run after the
caller's cancel event was set, and it reaches the caller unchanged.

    EngineError                      base of the edit engine's errors
      ContextOverflowError           the prompt (plus room to answer) exceeds the context window
      EditCancelled                  the caller cancelled
      ForcedProgramError             a forced program the grammar does not allow for this document
      UnknownStrategyError           (also ValueError) not a registered strategy
      InvalidRequestError            (also ValueError) a request field the engine cannot use
      InvalidRangeError              (also ValueError) a bad 1-based inclusive line range
      ProgramResolveError            the decoded program does not resolve (strict mode)
      PastedChangeError              a pasted diff / SEARCH/REPLACE blocks that do not fit the document
    ModelLoadError (RuntimeError)    the model could not be located or loaded
    AdapterError (ValueError)        an adapter directory that is missing, incomplete or for another base
    TokenTableError (ValueError)     a tokenizer cannot express the grammar
    ProgramParseError (ValueError)   a malformed program text
    ResolveError (ValueError)        an op that does not resolve against the document
"""
from __future__ import annotations


class EngineError(Exception):
    """Base class of every error the edit engine raises on purpose."""


class ContextOverflowError(EngineError):
    """The rendered prompt (plus room to answer) does not fit in the model's context window."""

    def __init__(self, prompt_tokens: int, context_length: int, reserve: int = 0, *, what: str = "document"):
        self.prompt_tokens = prompt_tokens
        self.context_length = context_length
        self.reserve = reserve
        super().__init__(
            f"the {what} is too long for the model: its prompt takes {prompt_tokens} tokens and "
            f"{reserve} more are reserved for the answer, but the context window holds "
            f"{context_length}. Select a smaller range of lines and edit that range only "
            f"(a range-scoped edit), or use a model with a longer context."
        )


class EditCancelled(EngineError):
    """The caller cancelled the edit; raised before the next forward would have run."""


class ForcedProgramError(EngineError):
    """A program given for forced decoding is not one the grammar allows for this document."""


class UnknownStrategyError(EngineError, ValueError):
    """`EditRequest.strategy` is not one of the registered strategies (`engine.strategies`)."""


class InvalidRequestError(EngineError, ValueError):
    """A field of `EditRequest` has a value the engine cannot use."""


class InvalidRangeError(EngineError, ValueError):
    """`line_range` is not a valid 1-based inclusive range of the document's lines."""


class ProgramResolveError(EngineError):
    """The decoded program does not resolve against the document (strict mode)."""


class PastedChangeError(EngineError):
    """The instruction is a diff or SEARCH/REPLACE blocks that do not pin down one result for this
    document: nothing is changed (the model is not asked to improvise an exact format)."""


class ModelLoadError(RuntimeError):
    """The model could not be located or loaded; the message says how to fix it."""


class AdapterError(ValueError):
    """An adapter directory is missing, incomplete or made for another base; the message says what to do."""


class TokenTableError(ValueError):
    """A tokenizer cannot express the grammar (a literal does not round-trip, or no digit tokens)."""


class ProgramParseError(ValueError):
    """A program text is malformed at character ``offset``; ``expected`` says what should be there."""

    def __init__(self, text: str, offset: int, expected: str, found: str | None = None):
        self.offset = offset
        self.expected = expected
        if found is None:
            found = repr(text[offset:offset + 20]) if offset < len(text) else "end of text"
        self.found = found
        super().__init__(f"invalid edit program at offset {offset}: expected {expected}, found {found}")


class ResolveError(ValueError):
    """Op ``op_index`` (``op``) cannot be resolved against a document of ``line_count`` lines."""

    def __init__(self, message: str, op_index: int, op, line_count: int, token_count: int | None = None):
        self.op_index = op_index
        self.op = op
        self.line_count = line_count
        self.token_count = token_count
        super().__init__(message)
