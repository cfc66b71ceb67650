"""Hostile JSON-RPC traffic for the real server over stdio: hypothesis strategies and the storm runner.

Shared by ``tests/reliability/test_protocol_fuzz.py`` (the CI run, ≥ 10,000 messages) and
``benchmarks/reliability.py`` (longer runs). Why a runner and not one hypothesis example per
server: starting a server costs ~1 s, so one server takes a whole storm, batch after batch, and
the invariant is checked after every batch:

* every well-framed request (integer or string id, string method) gets exactly one response with
  that id: a ``result``, or an ``error`` whose code is a JSON-RPC/LSP code the server documents
  and whose message is a sentence (never ``-32603``: that is a server bug);
* the process is alive and answers a sentinel request within :data:`HANG_S` (no hang).

Generated traffic: invalid JSON, wrong/missing/lowercase ``Content-Length``, truncated frames,
JSON-RPC envelopes of the wrong shape, unknown methods and notifications, ``executeCommand``
with missing or wrong-typed arguments, unknown/unopened/outside URIs, stale and non-integer
versions, NUL bytes, lone surrogates, CRLF/CR/mixed line ends, no trailing newline, empty and
100 kB instructions. Reproducible: the caller fixes hypothesis' seed.
"""
from __future__ import annotations

import itertools
import json
import time
from dataclasses import dataclass, field

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from tests.lsp.raw_client import RawClient

HANG_S = 90.0        # a server that answers nothing for this long is hung (generous: CI machines can be loaded)
SEED = 20240613
BATCHES = 260          # × (BATCH + 1 sentinel) ≥ 10,000 messages
BATCH = 40
ALLOWED_CODES = {-32700, -32600, -32601, -32602, -32002, -32800, -32803}
SENTINEL_METHOD = "cad/ping"  # unknown method: answered -32601 at once, cancels nothing

_ids = itertools.count(1)

# -- building blocks ---------------------------------------------------------------------------------
weird_text = st.one_of(
    st.sampled_from(["", "x = 1\n", "a\r\nb\r\n", "a\rb\rc", "a\nb\r\nc\r", "no newline", "\x00\x00", "nul\x00byte\n",
                     "lone \ud800 surrogate", "\udfff", "é日本\U0001f600\n", "\t\n\n\n", "<program></program>",
                     "# cad: fix it\nx = 1\n", "\u2028\u2029", "a" * 2000]),
    st.text(max_size=60),
)
instructions = st.one_of(
    weird_text,
    st.sampled_from(["fix", "  ", "rename x", "x" * 100_000, "slow: almost", "\x00"]),
    st.integers(), st.none(), st.lists(st.text(max_size=3), max_size=2),
)
json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=False),
                         st.text(max_size=12))
json_values = st.recursive(json_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)), max_leaves=10)
positions = st.one_of(
    st.fixed_dictionaries({"line": st.integers(-3, 40), "character": st.integers(-3, 200)}),
    st.fixed_dictionaries({"line": st.sampled_from([2**31, 10**20, "0", None, 1.5]), "character": st.just(0)}),
    json_values,
)
ranges = st.one_of(st.fixed_dictionaries({"start": positions, "end": positions}), json_values)


@dataclass
class World:
    """What the storm's documents look like: URIs inside the root (opened or not) and outside."""

    root_uri: str
    opened: list[str]
    unopened: list[str]
    versions: dict = field(default_factory=dict)

    def uris(self):
        return st.sampled_from([*self.opened, *self.unopened, "file:///etc/passwd", "not a uri", "untitled:x",
                                self.root_uri, "file:///nonexistent/dir/a.py", self.root_uri + "/../escape.py"])


def edit_args(world: World):
    full = st.fixed_dictionaries({"uri": world.uris(), "instruction": instructions}, optional={
        "range": ranges, "strategy": st.one_of(st.sampled_from(["cad", "regen", "nope", ""]), json_values),
        "maxNewTokens": st.one_of(st.integers(-5, 2**40), json_values),
        "comment": st.one_of(st.fixed_dictionaries({"line": st.integers(-1, 30), "text": weird_text}), json_values)})
    return st.one_of(full.map(lambda a: [a]), full.map(lambda a: [a]), full.map(lambda a: [a]), st.lists(json_values, max_size=3), st.just([]),
                     st.fixed_dictionaries({"previewId": st.one_of(st.text(max_size=20), json_values)}).map(lambda a: [a]))


def requests(world: World):
    commands = st.sampled_from(["cad.applyEdit", "cad.previewEdit", "cad.applyEdit", "cad.previewEdit",
                                "cad.applyPreview", "cad.cancelAll",
                                "cad.unknown", "", "workbench.action"])
    execute = st.builds(lambda c, a, tok: ("workspace/executeCommand",
                                           {"command": c, "arguments": a, **({"workDoneToken": tok} if tok else {})}),
                        commands, edit_args(world), st.one_of(st.none(), st.text(max_size=6)))
    execute_bad = st.builds(lambda p: ("workspace/executeCommand", p), json_values)
    code_action = st.builds(lambda u, r, ctx: ("textDocument/codeAction", {"textDocument": {"uri": u}, "range": r,
                                                                          "context": ctx}),
                            world.uris(), ranges, st.one_of(st.just({"diagnostics": []}), json_values))
    other = st.builds(lambda m, p: (m, p), st.sampled_from(
        ["textDocument/hover", "textDocument/completion", "foo/bar", "$/unknown", "workspace/symbol", "",
         "textDocument/codeAction", "workspace/executeCommand", "initialize"]), json_values)
    return st.one_of(execute, execute, execute, execute_bad, code_action, other)


def notifications(world: World):
    version = st.one_of(st.integers(-2, 10**6), st.sampled_from([2**31, 10**20, "three", None, 1.5]))
    did_open = st.builds(lambda u, t, v: ("textDocument/didOpen", {"textDocument": {
        "uri": u, "languageId": "python", "version": v, "text": t}}), world.uris(), weird_text, version)
    did_change = st.builds(lambda u, t, v: ("textDocument/didChange", {"textDocument": {"uri": u, "version": v},
                                                                       "contentChanges": [{"text": t}]}),
                           world.uris(), weird_text, version)
    did_close = st.builds(lambda u: ("textDocument/didClose", {"textDocument": {"uri": u}}), world.uris())
    cancel = st.builds(lambda i: ("$/cancelRequest", {"id": i}), st.one_of(st.integers(0, 10**6), json_values))
    progress_cancel = st.builds(lambda t: ("window/workDoneProgress/cancel", {"token": t}), json_values)
    junk = st.builds(lambda m, p: (m, p), st.sampled_from(["$/setTrace", "foo/notify", "exit!", "initialized",
                                                           "workspace/didChangeConfiguration"]), json_values)
    return st.one_of(did_open, did_change, did_close, cancel, progress_cancel, junk)


def _frame(body: bytes, header: bytes = b"Content-Length", delta: int = 0) -> bytes:
    return header + b": %d\r\n\r\n" % (len(body) + delta) + body


def _body(message: dict) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **message}).encode()


def frames(world: World):
    """(bytes, request id or None): one message each; the id is set when a response is owed."""
    def request(pair):
        msg_id = f"fz-{next(_ids)}"  # never collides with RawClient's integer ids
        method, params = pair
        return _frame(_body({"id": msg_id, "method": method, "params": params})), msg_id

    def notification(pair):
        method, params = pair
        return _frame(_body({"method": method, "params": params})), None

    def broken(kind_and_pair):
        kind, (method, params) = kind_and_pair
        body = _body({"id": f"broken-{next(_ids)}", "method": method, "params": params})
        return {
            "not-json": _frame(b"{not json" + body[:20]),
            "short-length": _frame(body, delta=-min(7, len(body) - 1)),
            "long-length": _frame(body, delta=+11),
            "no-length": b"X-Other: 1\r\n\r\n" + body,
            "nan-length": b"Content-Length: nan\r\n\r\n" + body,
            "truncated": _frame(body)[: len(_frame(body)) // 2],
            "garbage": b"\x00\xff\xfe garbage \r\n",
            "bad-envelope": _frame(json.dumps({"jsonrpc": "1.0", "id": {"x": 1}, "method": 5}).encode()),
            "array": _frame(b"[]"),
            "scalar": _frame(b"42"),
            "no-method": _frame(json.dumps({"jsonrpc": "2.0", "id": "nomethod", "params": {}}).encode()),
        }[kind], None

    def lowercase(pair):
        msg_id = f"fz-{next(_ids)}"  # never collides with RawClient's integer ids
        method, params = pair
        return _frame(_body({"id": msg_id, "method": method, "params": params}), header=b"content-length"), msg_id

    kinds = st.sampled_from(["not-json", "short-length", "long-length", "no-length", "nan-length", "truncated",
                             "garbage", "bad-envelope", "array", "scalar", "no-method"])
    return st.one_of(requests(world).map(request), requests(world).map(request), notifications(world).map(notification),
                     notifications(world).map(notification), st.tuples(kinds, requests(world)).map(broken),
                     requests(world).map(lowercase))


@dataclass
class StormStats:
    messages: int = 0
    requests: int = 0
    responses: int = 0
    errors: dict = field(default_factory=dict)
    edits_answered: int = 0   # cad.applyEdit / cad.previewEdit that returned a result
    deaths: int = 0
    hangs: int = 0
    batches: int = 0
    seconds: float = 0.0


def check_response(reply: dict, sent: bytes) -> None:
    """One response is a proper JSON-RPC result or a documented error with a sentence of a message."""
    assert ("result" in reply) != ("error" in reply), (reply, sent[:300])
    if "error" in reply:
        err = reply["error"]
        assert err.get("code") in ALLOWED_CODES, f"unexpected error code {err.get('code')}: {err} for {sent[:300]!r}"
        message = err.get("message")
        assert isinstance(message, str) and len(message) >= 10, (err, sent[:300])
        assert "Traceback" not in json.dumps(err), err


def run_batch(client: RawClient, batch: list[tuple[bytes, object]], stats: StormStats) -> None:
    """Send one batch and a sentinel; every owed response must arrive; the server must live."""
    owed = []
    for data, msg_id in batch:
        client.send_raw(data)
        stats.messages += 1
        if msg_id is not None:
            owed.append((msg_id, data))
    sentinel = client.request(SENTINEL_METHOD, {})
    stats.messages += 1
    try:
        client.response(sentinel, timeout=HANG_S)
    except AssertionError:
        if client.proc.poll() is not None:
            stats.deaths += 1
            raise AssertionError(f"server died (exit {client.proc.returncode}); stderr:\n{client.stderr()[-3000:]}")
        stats.hangs += 1
        raise
    for msg_id, data in owed:
        reply = client.response(msg_id, timeout=HANG_S)
        check_response(reply, data)
        stats.requests += 1
        stats.responses += 1
        code = reply.get("error", {}).get("code", "result")
        stats.errors[code] = stats.errors.get(code, 0) + 1
        if code == "result" and (b'"cad.applyEdit"' in data or b'"cad.previewEdit"' in data):
            stats.edits_answered += 1
        with client._cond:
            dupes = sum(1 for m in client.messages if m.get("id") == msg_id and "method" not in m)
        assert dupes == 1, f"{dupes} responses to request {msg_id}"
    stats.batches += 1
    if len(client.messages) > 20_000:  # keep the client's memory bounded over long runs
        with client._cond:
            del client.messages[:-2000]
            del client.received_at[:-2000]


def make_world(client: RawClient, root) -> World:
    """Open a few documents of every line-ending flavour, leave some files unopened on disk."""
    root.mkdir(parents=True, exist_ok=True)
    opened, unopened = [], []
    for k, text in enumerate(["def f(x):\n    return x\n", "a = 1\r\nb = 2\r\n", "a\rb\r", "x = 1\ny = 2",
                              "mixed\r\nends\nhere\r", ""]):
        uri = (root / f"open{k}.py").as_uri()
        client.open(uri, text)
        opened.append(uri)
    for k, text in enumerate(["z = 0\n", "\x00binary\x00", "é = 1\n"]):
        path = root / f"disk{k}.py"
        path.write_text(text)
        unopened.append(path.as_uri())
    (root / "dir.py").mkdir(exist_ok=True)
    unopened.append((root / "dir.py").as_uri())
    return World(root.as_uri(), opened, unopened)


def normal_edit_works(client: RawClient, root) -> dict:
    """After the storm: a plain cad.applyEdit on a fresh document is applied exactly."""
    uri = (root / "after_storm.py").as_uri()
    text = "def add(a, b):\n    return a - b\n"
    client.open(uri, text)
    before = len(client.requests_from_server("workspace/applyEdit"))
    reply = client.response(client.execute("cad.applyEdit", {"uri": uri, "instruction": "fix add"}), timeout=HANG_S)
    assert reply.get("result", {}).get("applied") is True, reply
    sent = client.requests_from_server("workspace/applyEdit")[before:]
    assert len(sent) == 1, sent
    change = sent[0]["params"]["edit"]["documentChanges"][0]
    assert change["textDocument"]["uri"] == uri
    assert any("# edited: fix add" in e["newText"] for e in change["edits"]), change
    return reply


FUZZ_ENV = {"FAKE_STEPS": "3", "FAKE_STEP_S": "0.002"}  # "slow…" instructions stay quick


def start_server(root, env: dict | None = None) -> RawClient:
    client = RawClient(env={**FUZZ_ENV, **(env or {})})
    client.initialize(root, options={"cad": {"applyEditTimeout": 2}})
    return client


def run_storm(root, batches: int = BATCHES, batch_size: int = BATCH, fuzz_seed: int = SEED) -> StormStats:
    """One server, ``batches`` hypothesis examples of ``batch_size`` frames each; returns the figures."""
    client = start_server(root)
    stats = StormStats()
    t0 = time.perf_counter()
    try:
        world = make_world(client, root / "ws")

        @seed(fuzz_seed)
        @settings(max_examples=batches, deadline=None, database=None, phases=[Phase.generate],
                  suppress_health_check=list(HealthCheck))
        @given(st.lists(frames(world), min_size=batch_size, max_size=batch_size))
        def storm(batch):
            run_batch(client, batch, stats)

        storm()
        normal_edit_works(client, root / "ws")
        assert client.proc.poll() is None
    finally:
        stats.seconds = time.perf_counter() - t0
        code = client.close()
    assert code == 0, f"server exit code {code} after shutdown/exit; stderr:\n{client.stderr()[-2000:]}"
    return stats
