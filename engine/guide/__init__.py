"""The guide: the grammar as token ids (``tokens``: built once per tokenizer) and the FSM that
says, at each step, which ids may come next (``fsm``)."""
