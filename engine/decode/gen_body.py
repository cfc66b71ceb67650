"""Gen bodies of the program decoder: free greedy text, optional drafts, end of gen (a mixin).

``GenBodies`` is mixed into ``engine.decode.program.ProgramDecoder`` and uses its schedule state
(``out``, ``pending``, ``ready``, ``runner``, ``fsm``, ``stats``) and its forwards (``_feed``,
``_commit``, ``_rewind``). One round = at most one forward: the drafter's draft (or the rest of a
partly written ``</gen>``) is verified by greedy choice, the longest matching prefix plus the
model's own next token is committed (``engine.decode.verify.accept_prefix``, the rule every verify
forward uses); a drafter with a ``screen_depth`` (CopyLoop) has the draft screened first. ``</gen>`` plus the guessed next op header are drafted
together in ONE forward when the body ends in a newline or a prefix of ``</gen>``. A drafter offering
several alternative drafts (``propose_many``) has them verified together in one forward
(``engine.decode.verify.verify_candidates``, ``_gen_candidates``). Each gen tells the drafter which
ids it replaces (``begin_gen``: the document lines after the last copy, framed like a gen body; see
``engine.drafters.replaced``); when the model leaves a draft with a token that ends a line, the next
round drafts ``</gen>`` + the next header instead (a gen usually ends after the line it fixed). End of gen per
``engine.decode.gen_end``; EOS closes the gen and the program; a gen repeating itself
(``engine.decode.repetition``) is stopped and reported truncated.
"""
from __future__ import annotations

from functools import partial

from engine.decode.gen_end import decode, find_gen_end
from engine.decode.repetition import repeating_unit
from engine.decode.screened import screen_depth, screened_feed
from engine.decode.verify import MAX_CANDIDATES, accept_prefix, verify_candidates
from engine.drafters.base import attach_session, begin_gen, propose_candidates
from engine.program.grammar import CopyLines, CopyTokens

REPLACED_LINES = 16     # document lines after the last copy offered to the drafter as what a gen replaces
REPLACED_TOKENS = 256   # the same in token mode


class GenBodies:
    """The gen-body half of the program decoder (see module doc)."""

    def _gen(self) -> None:
        start = len(self.out)
        attach_session(self.drafter, self.runner)
        if self._ahead is None:  # else the speculative forward that opened this gen began it
            begin_gen(self.drafter, self._replaced_ids)
        line_ended = False  # the model left the last draft with a token ending a line: the gen likely ends
        while True:
            body = self.out[start:]
            if self._ahead is not None:  # the first round was verified with <gen> (no forward here)
                pos0, drafted = len(self.out), len(self._ahead[1])
                new = self._ahead_round()
                line_ended = len(new) <= drafted and decode(self.tok, new[-1:]).endswith("\n")
                if self._round_ends_gen(start, pos0, new):
                    return
                continue
            if self._spent() >= self.max_new or self._room() <= 2:
                self._op().kind = "Gen"
                self.fsm.truncate(decode(self.tok, body))
                self.stats.truncated = True
                return
            # a round commits at most the draft + 1 token: never past the budget or the context window
            room = max(0, min(self.max_new - self._spent() - 1, self._room() - 3))
            drafts = []
            if not self._close_draft(body) and not line_ended:  # once </gen> is begun, its rest (+ the next header) is the draft
                drafts = [d[:room] for d in propose_candidates(self.drafter, self.prompt_ids + self.out, body,
                                                              MAX_CANDIDATES) if d[:room]]
            draft = drafts[0] if drafts else []
            if not draft and self.pending:
                ended = self._close_then_header(start, body)
                if ended is not None:
                    if ended:
                        return
                    continue
            if not draft:
                draft = self._close_draft(body)[:room]
            pos0 = len(self.out)
            new = self._gen_round(draft) if len(drafts) <= 1 else self._gen_candidates(drafts)
            line_ended = bool(draft) and len(new) <= max(map(len, drafts or [draft])) and \
                decode(self.tok, new[-1:]).endswith("\n")
            if self._round_ends_gen(start, pos0, new):
                return

    def _round_ends_gen(self, start: int, pos0: int, new: list[int]) -> bool:
        """After a round committed ``new`` at ``pos0``: end the gen at ``</gen>`` or EOS, or stop it where
        it started repeating itself (the program then ends truncated). True when the gen is over."""
        loop = self._runaway(start, pos0, len(new))
        if self._detect(start, pos0, new if loop is None else new[:loop + 1]):
            return True
        if loop is None:
            return False
        dropped, _ = self._rewind(self.out[:pos0 + loop + 1])
        self._count(-dropped, "decoded")
        self._op().kind = "Gen"
        self.fsm.truncate(decode(self.tok, self.out[start:]))
        self.stats.truncated = self.stats.repeating = True
        return True

    def _ahead_round(self) -> list[int]:
        """The gen's first round, whose draft rode with ``<gen>`` in the speculative forward that opened
        the gen (``ProgramDecoder._speculate``): its rows are already computed, so no forward here."""
        rows, draft, base = self._ahead
        self._ahead = None
        self.stats.draft_tokens += len(draft)
        pos0 = len(self.out)  # rows[i] predicts output position pos0 + i
        self._rows = (pos0, rows)
        accepted, bonus = accept_prefix(rows, draft, lambda k, row: self.chooser.choose(row, None, pos0 + k))
        self.runner.crop(base + len(accepted))
        self.drafter.update(len(accepted))
        self.stats.draft_accepted += len(accepted)
        self._commit(accepted, "decoded", fed=True)
        self._commit([bonus], "decoded")
        return accepted + [bonus]

    def _replaced_ids(self, ops=None) -> list[int]:
        """The ids of this gen's body if it kept the document text after the last copy unchanged
        (line mode: those lines framed like a gen body, ``"\n" + lines + "\n"``; token mode: the
        document's own ids); [] when the last copy reached the document's end. ``ops``: the program so
        far (default: the live FSM's)."""
        kind = CopyTokens if self.token_level else CopyLines
        ops = self.fsm.ops if ops is None else ops
        end = next((op.end for op in reversed(ops) if isinstance(op, kind)), None)
        if self.token_level:
            first = 0 if end is None else end + 1
            return list(self.view.token_ids[first:first + REPLACED_TOKENS])
        first = 1 if end is None else end + 1
        if first > self.view.n_lines:
            return []
        return self.view.payload_ids(first, min(self.view.n_lines, first + REPLACED_LINES - 1))

    def _runaway(self, start: int, pos0: int, n: int) -> int | None:
        """The first of the ``n`` tokens committed at ``pos0`` after which the gen repeats itself
        (``engine.decode.repetition``), or None. Checked token by token, so a drafted round stops
        the gen exactly where one-token rounds would; never in forced mode."""
        if self.forced is not None:
            return None
        for i in range(n):
            if repeating_unit(self.out[start:pos0 + i + 1]) is not None:
                return i
        return None

    def _detect(self, start: int, pos0: int, new: list[int]) -> bool:
        """End-of-gen / EOS detection over tokens just committed at ``pos0``; closes the gen if found."""
        for i, tok in enumerate(new):
            pos = pos0 + i
            if tok in self.table.stop_ids:
                text = decode(self.tok, self.out[start:pos])
                dropped, added = self._rewind(self.out[:pos] + list(self.table.gen_close))
                self._count(-dropped, "decoded")
                self._count(added, "forced")
                self._op().kind = "Gen"
                self.fsm.finish_gen(text, eos=True)
                return True
            end = find_gen_end(self.tok, self.out[start:pos + 1], self.table.gen_close)
            if end is not None:
                dropped, added = self._rewind(self.out[:start] + end.canonical_ids)
                self._count(-dropped, "decoded")
                self._count(added, "forced")
                self._reuse_row()
                self._op().kind = "Gen"
                self.fsm.finish_gen(end.body_text)
                return True
        return False

    def _close_then_header(self, start: int, body: list[int]) -> bool | None:
        """Draft ``</gen>`` (its remaining tokens) plus the guessed next op header in ONE forward.

        Tried when the body ends with a proper prefix of ``</gen>``'s tokens, or (line mode) with a
        newline. The close tokens are verified by unmasked greedy choice (they are gen text); if
        all match, the gen ends and the header part is verified under the FSM's masks exactly as a
        speculative header. Returns None when no such draft applies (nothing was fed); True when
        this round's forward ran and the gen ended; False when it ran and the gen goes on.
        """
        if not self.spec:
            return None
        close = list(self.table.gen_close)
        rest = self._close_draft(body)
        if rest:
            body_part = body[:len(body) - (len(close) - len(rest))]
        elif not self.token_level and body and decode(self.tok, body[-1:]).endswith("\n"):
            rest, body_part = close, body
        else:
            return None
        clone = self.fsm.clone()
        clone.finish_gen(decode(self.tok, body_part))
        header = self._guess_ids(clone)
        draft = rest + header
        draft = draft[:max(0, min(self.max_new - self._spent() - 1, self._room() - 3))]
        if len(draft) <= len(rest):
            return None
        header = draft[len(rest):]  # the budget may have cut the guessed header short
        base, npend = self.runner.length, len(self.pending)
        logits = self._feed(self.pending + draft, keep=len(draft) + 1)
        self.pending = []
        self.stats.draft_tokens += len(rest)
        rows = list(logits)
        pos0 = len(self.out)
        kept, tok = accept_prefix(rows, rest, lambda i, row: self.chooser.choose(row, None, pos0 + i), bonus=False)
        if tok is not None:  # the model left the close draft at row i
            i = len(kept)
            self.runner.crop(base + npend + i)
            self.stats.draft_accepted += i
            self._commit(rest[:i], "decoded", fed=True)
            self._commit([tok], "decoded")
            self._rows = (pos0, rows[:i + 1])
            return self._detect(start, pos0, rest[:i] + [tok])
        self.stats.draft_accepted += len(rest)
        self._commit(rest, "decoded", fed=True)
        end = find_gen_end(self.tok, self.out[start:], self.table.gen_close)
        if end is None or end.canonical_ids != self.out[start:]:  # pragma: no cover - odd byte splits
            self.runner.crop(base + npend + len(rest))
            self._rows = (pos0, rows[:len(rest) + 1])
            return self._detect(start, pos0, rest)
        self._op().kind = "Gen"
        self.fsm.finish_gen(end.body_text)
        self._verify_guess(rows[len(rest):], header, base + npend + len(rest))
        return True

    def _close_draft(self, body: list[int]) -> list[int]:
        """Draft the rest of ``</gen>`` when the body ends with a proper prefix of its tokens."""
        close = list(self.table.gen_close)
        for j in range(len(close) - 1, 0, -1):
            if len(body) >= j and body[-j:] == close[:j]:
                return close[j:]
        return []

    def _reuse_row(self) -> None:
        """After a gen end, reuse the verify forward's row that already predicts the next token."""
        if self.pending or self._rows is None:
            return
        pos0, rows = self._rows
        i = len(self.out) - pos0
        if 0 <= i < len(rows) and rows[i] is not None and self.runner.length == len(self.prompt_ids) + len(self.out):
            self.ready = rows[i]

    def _draft_feed(self, ids: list[int], draft: list[int], *, keep: int, first: int):
        """The verify forward of a gen round over ``ids`` (its tail from ``first`` is draft), screened
        when the drafter asks for it (CopyLoop, ``engine.decode.screened``); returns the rows and the
        draft that survived screening (all of it when unscreened)."""
        depth = screen_depth(self.runner, self.drafter)
        forward = partial(screened_feed, self.runner, first=first, depth=depth) if depth else None
        logits = self._feed(ids, keep=keep, forward=forward)
        return logits, draft[:len(draft) - (keep - len(logits))]

    def _gen_round(self, draft: list[int]) -> list[int]:
        """One forward (or none): commit the accepted draft prefix + the model's next token."""
        self.stats.draft_tokens += len(draft)
        if self.ready is not None and not self.pending:
            first = self.chooser.choose(self.ready, None, len(self.out))
            self.ready = None
            if not draft or first != draft[0]:
                if draft:
                    self.drafter.update(0)
                self._commit([first], "decoded")
                return [first]
            base, npend = self.runner.length, 0
            logits, draft = self._draft_feed(draft, draft, keep=len(draft), first=1)
            rows = [None, *logits]
            accepted, i = [first], 1
        else:
            self._ensure_pending()
            base, npend = self.runner.length, len(self.pending)
            logits, draft = self._draft_feed(self.pending + draft, draft, keep=len(draft) + 1, first=npend)
            self.pending = []
            rows, accepted, i = list(logits), [], 0
        pos0 = len(self.out)  # rows[i] predicts output position pos0 + i
        self._rows = (pos0, rows)
        more, bonus = accept_prefix(rows, draft, lambda k, row: self.chooser.choose(row, None, pos0 + k), start=i)
        accepted += more
        self.runner.crop(base + npend + len(accepted))
        if draft:
            self.drafter.update(len(accepted))
        self.stats.draft_accepted += len(accepted)
        self._commit(accepted, "decoded", fed=True)
        self._commit([bonus], "decoded")
        if not self.ride:
            self._flush()
        return accepted + [bonus]

    def _gen_candidates(self, drafts: list[list[int]]) -> list[int]:
        """One forward verifying several alternative drafts (``verify_candidates``): commit the winner's
        accepted prefix + the model's next token. A row already computed (``ready``) decides the
        first token without a forward; only drafts starting with it go on (minus that token)."""
        self.stats.draft_tokens += sum(map(len, drafts))
        committed: list[int] = []
        if self.ready is not None and not self.pending:
            first = self.chooser.choose(self.ready, None, len(self.out))
            self.ready = None
            self._commit([first], "decoded")            # not fed: it is the verify forward's pending id
            committed = [first]
            matching = [d[1:] for d in drafts if d[0] == first]
            self.stats.draft_accepted += 1 if matching else 0
            drafts = [d for d in matching if d]
            if not drafts:                              # nothing left to verify: the next round feeds it
                self.drafter.update(1 if matching else 0)
                return committed
        self._ensure_pending()
        pos0 = len(self.out)
        self._charge_time()
        v = verify_candidates(self.runner, self.pending, drafts,
                              choose=lambda k, row, prefix: self.chooser.choose(row, None, pos0 + k))
        self._op().forwards += 1
        self.stats.forwards += 1
        self._charge_time()
        if self.progress is not None:
            self.progress(self.stats.progress(len(self.fsm.ops)))
        self.pending = []
        self._rows = (pos0, v.rows) if v.rows is not None else None
        self.drafter.update(len(committed) + len(v.accepted))
        self.stats.draft_accepted += len(v.accepted)
        self._commit(v.accepted, "decoded", fed=True)
        self._commit([v.bonus], "decoded")
        if not self.ride:
            self._flush()
        return committed + v.accepted + [v.bonus]
