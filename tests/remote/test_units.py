"""Units of engine.remote that need no serving engine: specs, the op grammar, the HTTP layer."""
from __future__ import annotations

import http.server
import json
import re
import subprocess
import sys
import threading
import time

import pytest

from engine.api import EditEngine, EditRequest, EngineError
from engine.errors import EditCancelled, InvalidRequestError
from engine.remote.errors import RemoteConnectionError, RemoteHTTPError
from engine.remote.gbnf import end_grammar, int_range, op_grammar
from engine.remote.http import call_json
from engine.remote.spec import is_remote_spec, parse_remote_spec


def test_spec_parsing():
    s = parse_remote_spec("http://127.0.0.1:8080/v1/")
    assert (s.base_url, s.model, s.root_url, s.tokenizer) == ("http://127.0.0.1:8080/v1", None,
                                                             "http://127.0.0.1:8080", "default")
    s = parse_remote_spec("http://h:1/v1#smollm2-135m-cad&timeout=5&retries=0")
    assert (s.model, s.timeout, s.retries, s.profile_for(s.model)) == ("smollm2-135m-cad", 5.0, 0, "short")
    s = parse_remote_spec("http://h:1/v1#model=qwen&profile=teach")
    assert (s.model, s.profile_for("qwen-cad")) == ("qwen", "teach")
    assert parse_remote_spec("http://h:1/v1#llama").profile_for("llama") == "teach"
    assert is_remote_spec("https://x/v1") and not is_remote_spec("default") and not is_remote_spec(None)
    for bad in ("http:///v1", "http://h:1/v1?model=x", "http://h:1/v1#colour=red", "http://h:1/v1#profile=loud",
                "http://h:1/v1#timeout=-1"):
        with pytest.raises(InvalidRequestError):
            parse_remote_spec(bad)


def _gbnf_alternation_as_regex(alternation: str) -> re.Pattern:
    return re.compile("(" + re.sub(r"\s+", "", alternation.replace('"', "")) + r")\Z")


@pytest.mark.parametrize("lo,hi", [(1, 1), (1, 9), (1, 10), (1, 47), (12, 40), (7, 123), (0, 0), (0, 1000),
                                   (99, 100), (250, 5017), (1, 2000)])
def test_int_range_matches_exactly_the_numbers_in_range(lo, hi):
    rx = _gbnf_alternation_as_regex(int_range(lo, hi))
    for x in range(0, 6000):
        assert bool(rx.match(str(x))) == (lo <= x <= hi), x
    assert not rx.match("0" + str(max(lo, 1)))   # no leading zeros


def test_op_grammar_shapes():
    g = op_grammar(47, has_ops=False)
    assert g.startswith('root ::= copy | "<gen>"\n') and "</program>" not in g
    assert 'copy ::= "<copy lines=\\"" idx "-" idx "\\"/>"' in g
    assert '"</program>"' in op_grammar(3, has_ops=True)
    assert '<copy tokens=\\"' in op_grammar(30, has_ops=True, token_level=True)
    assert end_grammar(12, 40).startswith('root ::= idx "\\"/>"')


class _Handler(http.server.BaseHTTPRequestHandler):
    script: list = []          # (status, body, delay) answers in order, then the last one again
    hits = 0

    def do_POST(self):  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        cls = type(self)
        status, body, delay = cls.script[min(cls.hits, len(cls.script) - 1)]
        cls.hits += 1
        time.sleep(delay)
        data = json.dumps(body).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            pass

    def log_message(self, *args):
        pass


@pytest.fixture
def scripted_http():
    """A stdlib HTTP endpoint answering from a script (tests the HTTP layer; it is not an engine)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()

    def run(script):
        _Handler.script, _Handler.hits = script, 0
        return f"http://127.0.0.1:{server.server_address[1]}/x"

    yield run
    server.shutdown()
    server.server_close()


def test_retries_5xx_then_succeeds(scripted_http):
    url = scripted_http([(503, {"error": {"message": "loading"}}, 0), (502, {}, 0), (200, {"ok": 1}, 0)])
    assert call_json(url, {"a": 1}, retries=3, backoff=0.01) == {"ok": 1}
    assert _Handler.hits == 3


def test_5xx_after_the_retries_and_4xx_at_once(scripted_http):
    url = scripted_http([(500, {"error": {"message": "boom"}}, 0)])
    with pytest.raises(RemoteHTTPError, match="boom"):
        call_json(url, {}, retries=2, backoff=0.01)
    assert _Handler.hits == 3
    url = scripted_http([(400, {"error": {"message": "bad grammar"}}, 0)])
    with pytest.raises(RemoteHTTPError, match="HTTP 400: bad grammar"):
        call_json(url, {}, retries=3, backoff=0.01)
    assert _Handler.hits == 1


def test_cancel_aborts_the_in_flight_request(scripted_http):
    url = scripted_http([(200, {"ok": 1}, 5.0)])
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    t0 = time.monotonic()
    with pytest.raises(EditCancelled):
        call_json(url, {}, cancel=cancel, retries=0)
    assert time.monotonic() - t0 < 2.0


def test_wrong_url_is_a_clear_engine_error():
    engine = EditEngine("http://127.0.0.1:9/v1#timeout=2&retries=1")
    with pytest.raises(RemoteConnectionError, match="cannot reach http://127.0.0.1:9/v1/models") as info:
        engine.edit(EditRequest("a\n", "Fix it."))
    assert isinstance(info.value, EngineError) and "Is the server running" in str(info.value)


def test_url_spec_keeps_engine_api_torch_free():
    code = ("import sys; from engine.api import EditEngine; EditEngine('http://127.0.0.1:9/v1'); "
            "bad = [m for m in ('torch', 'transformers') if m in sys.modules]; print(bad); sys.exit(bool(bad))")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).returncode == 0


class _Routes(http.server.BaseHTTPRequestHandler):
    """An OpenAI-shaped endpoint that ignores grammars (exercises the connect-time check, not an engine)."""

    routes: dict = {}

    def _answer(self):
        if self.command == "POST":
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
        status, body = self.routes.get(self.path, (404, {"error": {"message": "not found"}}))
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = _answer

    def log_message(self, *args):
        pass


def test_server_that_ignores_grammars_is_refused_at_connect():
    from engine.remote.errors import GrammarUnsupportedError, RemoteModelError

    _Routes.routes = {
        "/v1/models": (200, {"data": [{"id": "m", "owned_by": "acme", "max_model_len": 2048}]}),
        "/v1/completions": (200, {"choices": [{"text": "Hello there", "finish_reason": "length"}], "usage": {}}),
    }
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Routes)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        with pytest.raises(GrammarUnsupportedError, match="ignored the grammar constraint"):
            EditEngine(url).load()
        with pytest.raises(RemoteModelError, match="does not serve the model 'x'; it serves: m"):
            EditEngine(url + "#x").load()
    finally:
        server.shutdown()
        server.server_close()
