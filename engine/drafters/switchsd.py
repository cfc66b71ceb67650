"""SwitchSD ("To Copy or Not to Copy"): copy drafts gated by a copy-intent probe on the model's hidden state.

Each round the drafter decides whether the model is in copy mode:

* structural evidence: the kappa-gram ending the text so far (context + generated, ``kappa`` = 5)
  occurred earlier in it;
* intent: a linear probe without bias on one layer's hidden state of the last cached position,
  ``sigmoid(w . h) >= tau`` (layer, site, w and tau from ``copy_probe.json``, trained and selected by
  F1 on a validation split by ``python -m training.probe``).

When both hold, the drafter proposes up to ``candidates`` (W) drafts of ``window`` tokens: the
continuations of the W most recent earlier occurrences of the kappa-gram (distinct ones, most recent
first). ``propose_many`` returns them all; the decoding loop verifies them together in ONE forward
(``engine.decode.verify.verify_candidates``: a block-triangular mask keeps them apart) and keeps the
longest accepted one. Otherwise the paper's neural drafter: the draft model when one is configured
(``fallback``, ``engine.drafters.draft_model``), else no draft (a plain greedy step). This model's own
shallow layers (an early exit through the final norm and lm_head) were measured as that drafter and cost more than they save: on held-out regeneration
answers their top-1 agreement with the full model is at most a few percent for exits within the
first half of the 30 layers, and reaches roughly 40% only at 24 layers, where a draft step already
costs about 0.8 of a full forward, so they are not used as that drafter. Lossless like every drafter: every draft is verified by ``accept_prefix``.

The probe is read through the session (``attach``): the decoding loop hands the drafter its session;
if the session can record hidden states (``engine.backends.kv.KVRunner.record_hidden``) and its model
matches the probe's signature (the default model: SmolLM2-135M with the shipped adapter merged), the
session records the probed layer and the gate reads its last row. With another model, another
backend, or no probe file, the gate is the kappa-gram match alone (prompt lookup with W recent
candidates).
"""
from __future__ import annotations

import json
import math
from pathlib import Path

from engine.drafters.base import joined

PROBE_PATH = Path(__file__).resolve().parents[1] / "weights" / "smollm2-135m-cad" / "copy_probe.json"


def load_probe(path: Path | str = PROBE_PATH) -> dict | None:
    """The probe file's content (layer, site, tau, weight, model signature), or None when absent."""
    path = Path(path)
    if not path.is_file():
        return None
    probe = json.loads(path.read_text())
    if probe.get("format") != 1 or len(probe["weight"]) != probe["model"]["hidden_size"]:
        raise ValueError(f"{path} is not a format-1 copy probe")
    return probe


def model_matches(probe: dict, model) -> bool:
    """Whether ``model`` is the model the probe was trained on (sizes, and the probed layer's weight norms
    within the probe's tolerance)."""
    config = getattr(model, "config", None)
    sig = probe["model"]
    if config is None or any(getattr(config, k, None) != sig[k]
                             for k in ("hidden_size", "num_hidden_layers", "vocab_size")):
        return False
    layers = getattr(getattr(model, "model", None), "layers", None)   # the Llama layout the probe was read from
    if layers is None or not 0 <= probe["layer"] < len(layers):
        return False
    params = dict(layers[probe["layer"]].named_parameters())
    for name, norm in sig["layer_norms"].items():
        p = params.get(name)
        if p is None or abs(float(p.detach().double().norm()) - norm) > sig["tolerance"] * abs(norm):
            return False
    return True


class SwitchSDProposer:
    """Copy drafts from the W most recent kappa-gram matches, when the copy-intent probe agrees."""

    def __init__(self, window: int = 16, candidates: int = 4, kappa: int = 5, probe: dict | None | str = "default",
                 fallback=None):
        if window < 1 or candidates < 1 or kappa < 1:
            raise ValueError(f"bad switchsd options window={window} candidates={candidates} kappa={kappa}")
        self.window, self.candidates, self.kappa = window, candidates, kappa
        self.probe = load_probe() if probe == "default" else probe
        self._session = None
        self._weight = None          # torch tensor of the probe's weight, while the session records
        self.fallback = fallback     # the neural drafter below the gate (a DraftModelProposer), or None
        self._last_neural = False    # the last proposal came from the fallback
        self.counts = {"rounds": 0, "matched": 0, "gated_out": 0, "drafted": 0, "accepted": 0, "neural": 0}

    def attach(self, session) -> None:
        """Record the probed layer on ``session`` when its model is the probe's (else: kappa-gram gate only)."""
        if session is self._session:
            return
        self._session, self._weight = session, None
        model = getattr(session, "model", None)
        if self.probe is None or model is None or not hasattr(session, "record_hidden"):
            return
        if not model_matches(self.probe, model):
            return
        import torch

        session.record_hidden(self.probe["layer"], self.probe["site"])
        self._weight = torch.tensor(self.probe["weight"], dtype=torch.float32)

    def _intent(self) -> bool:
        """The probe's gate on the last cached position (True when there is no probe to ask; False while
        the session has no recorded row for it, e.g. before the first forward)."""
        if self._weight is None:
            return True
        row = self._session.hidden_row(-1)
        if row is None:
            return False
        logit = float(row.to(self._weight.device) @ self._weight)
        return 1.0 / (1.0 + math.exp(-logit)) >= self.probe["tau"]

    def propose_many(self, context_ids: list[int], generated: list[int], limit: int) -> list[list[int]]:
        self.counts["rounds"] += 1
        tokens = joined(context_ids, generated)
        self._last_neural = False
        k = self.kappa
        if len(tokens) <= k:
            return self._neural(context_ids, generated)
        gram, first, drafts = tokens[-k:], tokens[-k], []
        i = len(tokens) - k - 1                   # the latest earlier start: occurrences end before the gram
        while i >= 0 and len(drafts) < min(self.candidates, limit):
            try:
                i = _rindex(tokens, first, i)
            except ValueError:
                break
            if tokens[i:i + k] == gram:
                cont = tokens[i + k:i + k + self.window]
                if cont and cont not in drafts:
                    drafts.append(cont)
            i -= 1
        if drafts:
            self.counts["matched"] += 1
            if self._intent():
                self.counts["drafted"] += 1
                return drafts
            self.counts["gated_out"] += 1
        return self._neural(context_ids, generated)

    def _neural(self, context_ids: list[int], generated: list[int]) -> list[list[int]]:
        """Below the gate (or without a match): the draft model's draft, when one is configured."""
        if self.fallback is None:
            return []
        self.counts["neural"] += 1
        self._last_neural = True
        draft = self.fallback.propose(context_ids, generated)
        return [draft] if draft else []

    def propose(self, context_ids: list[int], generated: list[int]) -> list[int]:
        drafts = self.propose_many(context_ids, generated, 1)
        return drafts[0] if drafts else []

    def update(self, accepted: int) -> None:
        self.counts["accepted"] += accepted
        if self._last_neural:
            self.fallback.update(accepted)


def _rindex(tokens: list[int], value: int, end: int) -> int:
    """The largest index <= ``end`` holding ``value`` (ValueError when there is none)."""
    for i in range(end, -1, -1):
        if tokens[i] == value:
            return i
    raise ValueError(value)
