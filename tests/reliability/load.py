"""Concurrent edit load on one real server (fake engine): latencies, queueing, server memory.

Shared by tests/reliability/test_concurrency.py and benchmarks/reliability.py. ``burst`` fires
N ``cad.applyEdit`` requests at once on one document (the server runs one decode at a time and
queues the rest) and returns each request's latency from send to response; ``soak`` repeats
bursts for a while and samples the server's resident memory.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field

from tests.lsp.raw_client import RawClient

DOC = "".join(f"value_{i} = {i}\n" for i in range(40))


@dataclass
class Burst:
    n: int
    latencies_ms: list = field(default_factory=list)
    applied: int = 0
    errors: int = 0

    def pct(self, q: float) -> float:
        data = sorted(self.latencies_ms)
        return data[min(len(data) - 1, int(round(q * (len(data) - 1))))] if data else float("nan")


def burst(client: RawClient, uri: str, n: int, instruction: str = "slow: edit", timeout: float = 120.0) -> Burst:
    sent = {}
    for k in range(n):
        sent[client.execute("cad.applyEdit", {"uri": uri, "instruction": f"{instruction} {k}"})] = time.perf_counter()
    out = Burst(n)
    for msg_id, t0 in sent.items():
        reply = client.response(msg_id, timeout=timeout)
        with client._cond:
            at = next(t for m, t in zip(client.messages, client.received_at) if m.get("id") == msg_id and "method" not in m)
        out.latencies_ms.append((at - t0) * 1000.0)
        if reply.get("result", {}).get("applied"):
            out.applied += 1
        elif "error" in reply:
            out.errors += 1
    return out


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS:"))


def soak(client: RawClient, uri: str, seconds: float, n: int = 4) -> dict:
    """Repeated bursts for ``seconds``; RSS after the first burst vs at the end."""
    t_end = time.monotonic() + seconds
    first = None
    samples = []
    edits = 0
    while time.monotonic() < t_end:
        b = burst(client, uri, n, instruction="edit")
        edits += b.n
        with client._cond:  # bound the client's own memory
            del client.messages[:-200]
            del client.received_at[:-200]
        samples.append(rss_kib(client.proc.pid))
        first = first or samples[-1]
    return {"edits": edits, "rss_first_kib": first, "rss_last_kib": samples[-1] if samples else None,
            "rss_max_kib": max(samples) if samples else None, "seconds": seconds,
            "median_rss_kib": statistics.median(samples) if samples else None}
