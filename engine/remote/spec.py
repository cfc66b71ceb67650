"""Remote model specs: a URL names an OpenAI-compatible server instead of local weights.

    http://127.0.0.1:8080/v1                         the one model the server serves (from /v1/models)
    http://127.0.0.1:8000/v1#smollm2-135m-cad        that served model name
    http://127.0.0.1:8000/v1#model=NAME&profile=short&tokenizer=default&timeout=120&retries=3

The fragment is never sent to the server. Options: ``model`` (the served name; a bare first item
is the same), ``profile`` (the ``engine.prompt`` profile the weights expect: ``short`` for weights
trained on this project's programs, ``teach`` otherwise; default: ``short`` when the served name
contains ``cad``, else ``teach``), ``tokenizer`` (a local tokenizer spec for
``engine.backends.model.load_tokenizer``, default ``default``; it must be the served model's
tokenizer, checked at connect time where the server has ``/tokenize``), ``timeout`` (seconds per
request, default 300), ``retries`` (attempts after the first on connection errors and 5xx, default 3).
"""
from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qsl, urlsplit

from engine.errors import InvalidRequestError
from engine.prompt import PROMPT_PROFILES

_SCHEMES = ("http://", "https://")


def is_remote_spec(spec) -> bool:
    """True for a model spec that names a server (``http://`` or ``https://``)."""
    return isinstance(spec, str) and spec.strip().lower().startswith(_SCHEMES)


@dataclass(frozen=True)
class RemoteSpec:
    """A parsed remote spec (see module doc)."""

    base_url: str                 # scheme://host:port/path, without a trailing slash (usually ending in /v1)
    model: str | None = None
    profile: str | None = None
    tokenizer: str = "default"
    timeout: float = 300.0
    retries: int = 3

    @property
    def root_url(self) -> str:
        """The server root (``base_url`` without a trailing ``/v1``): where /tokenize, /health, /metrics live."""
        return self.base_url[:-3] if self.base_url.endswith("/v1") else self.base_url

    def profile_for(self, served: str) -> str:
        if self.profile is not None:
            return self.profile
        return "short" if "cad" in served.lower() else "teach"


def parse_remote_spec(spec: str) -> RemoteSpec:
    """Parse a URL spec; raises InvalidRequestError naming what is wrong."""
    if not is_remote_spec(spec):
        raise InvalidRequestError(f"not a remote model spec (expected http://host:port/v1): {spec!r}")
    url, _, fragment = spec.strip().partition("#")
    parts = urlsplit(url)
    if not parts.hostname:
        raise InvalidRequestError(f"remote model spec {spec!r} has no host; e.g. http://127.0.0.1:8080/v1")
    try:
        parts.port
    except ValueError as exc:
        raise InvalidRequestError(f"remote model spec {spec!r}: bad port ({exc})") from exc
    if parts.query:
        raise InvalidRequestError(f"remote model spec {spec!r}: put options after '#', not '?'")
    base = f"{parts.scheme.lower()}://{parts.netloc}{parts.path.rstrip('/')}"
    opts: dict[str, str] = {}
    for i, item in enumerate(x for x in fragment.split("&") if x):
        if "=" not in item and i == 0:
            opts["model"] = item
            continue
        opts.update(parse_qsl(item, keep_blank_values=True, strict_parsing=False) or [(item, "")])
    unknown = set(opts) - {"model", "profile", "tokenizer", "timeout", "retries"}
    if unknown:
        raise InvalidRequestError(f"remote model spec {spec!r}: unknown option(s) {sorted(unknown)}; "
                                  f"known: model, profile, tokenizer, timeout, retries")
    profile = opts.get("profile") or None
    if profile is not None and profile not in PROMPT_PROFILES:
        raise InvalidRequestError(f"remote model spec: profile must be one of {PROMPT_PROFILES}, got {profile!r}")
    try:
        timeout = float(opts.get("timeout", 300.0))
        retries = int(opts.get("retries", 3))
    except ValueError as exc:
        raise InvalidRequestError(f"remote model spec {spec!r}: timeout/retries must be numbers ({exc})") from exc
    if timeout <= 0 or not 0 <= retries <= 10:
        raise InvalidRequestError(f"remote model spec {spec!r}: timeout must be > 0 and retries in 0..10")
    return RemoteSpec(base_url=base, model=opts.get("model") or None, profile=profile,
                      tokenizer=opts.get("tokenizer") or "default", timeout=timeout, retries=retries)
