"""Small evaluation metrics shared by the benchmarks and the benchmark client (plain Python)."""
from __future__ import annotations

import math
from typing import Iterable


def percentile(values: Iterable[float], q: float) -> float:
    """Nearest-rank-with-interpolation percentile (q in [0, 100]); nan for no values."""
    data = sorted(values)
    if not data:
        return float("nan")
    pos = (len(data) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return float(data[lo] + (data[hi] - data[lo]) * (pos - lo))


def exact_match(candidate: str, gold: str) -> bool:
    """Byte-exact after stripping at most one trailing newline from each (the seed's r(·))."""
    strip1 = lambda s: s[:-1] if s.endswith("\n") else s  # noqa: E731
    return strip1(candidate) == strip1(gold)
