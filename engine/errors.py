"""Typed engine errors shared by the decoder, regeneration and engine.api.

Every message says what went wrong, where, and what to do about it.
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
