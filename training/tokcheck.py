"""``python -m training.tokcheck SPEC CASES.jsonl``: a fingerprint of the rendered training ids of the
first 40 cases. Run it where the data was built and where training runs (another machine, another
transformers): equal fingerprints mean both render exactly the same targets."""
from __future__ import annotations

import hashlib
import json
import sys


def fingerprint(spec: str, cases_path: str, n: int = 40) -> str:
    from engine.backends.model import load_tokenizer
    from training.dataset import load_cases
    from training.render import render_case

    tok = load_tokenizer(spec)
    ids = [render_case(c, tok).ids for c in load_cases(cases_path)[:n]]
    return hashlib.sha256(json.dumps(ids).encode()).hexdigest()


if __name__ == "__main__":
    print(fingerprint(sys.argv[1], sys.argv[2]))
