"""The HTTP side of the read API (``cohort.Api``): where the server is, one keep-alive
connection to it, and the mapping of its JSON errors to exceptions.

The server URL and API key come from the same places as ``cohort.init``'s: arguments, then
``COHORT_BASE_URL`` / ``COHORT_API_KEY``, then the config file that ``cohort login`` (or a local
``cohort server`` at its first start) wrote (``$XDG_CONFIG_HOME/cohort/config.json``, else
``~/.config/cohort/config.json``), then ``http://127.0.0.1:8787``.

Threading: a ``Transport`` holds one connection and is not thread-safe; use one ``Api`` per
thread.
"""
from __future__ import annotations

import http.client
import json
import os
import time
import urllib.parse
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

from ._native import native
from .errors import AuthenticationError, CommError, Error, UsageError

DEFAULT_BASE_URL = "http://127.0.0.1:8787"
_THROTTLE_RETRIES = 5
_MAX_WAIT_S = 30.0


class NotFound(UsageError, LookupError):
    """The run, project or group does not exist (or belongs to another entity)."""

    code = "not_found"


class AuthError(AuthenticationError):
    """The API key is missing, unknown, revoked or not allowed to read this."""

    code = "unauthenticated"


class Unreachable(CommError):
    """No answer came: the server cannot be reached, or the connection dropped."""


def config_path() -> str:
    """The user's config file, as the C++ client resolves it."""
    xdg = os.environ.get("XDG_CONFIG_HOME")
    base = xdg if xdg else os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "cohort", "config.json")


def resolve(base_url: Optional[str], api_key: Optional[str]) -> Tuple[str, str]:
    """(base_url, api_key) from the arguments, the environment, the config file, defaults."""
    url = base_url or os.environ.get("COHORT_BASE_URL") or ""
    key = api_key or os.environ.get("COHORT_API_KEY") or ""
    if not url or not key:
        path = config_path()
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        except FileNotFoundError:
            data = {}
        except (OSError, ValueError) as e:
            raise UsageError(f"cannot read the cohort config file {path}: {e}") from e
        if not isinstance(data, dict):
            raise UsageError(f"cohort config file {path}: expected a JSON object")
        url = url or str(data.get("base_url") or "")
        key = key or str(data.get("api_key") or "")
    url = (url or DEFAULT_BASE_URL).rstrip("/")
    if not key:
        raise AuthError("no API key: set COHORT_API_KEY, pass Api(api_key=...) or run "
                        "`cohort login`")
    return url, key


def _error_for(status: int, payload: Any, what: str) -> Error:
    """The exception for a non-2xx answer; `what` names the request for the message."""
    code, message = None, None
    if isinstance(payload, dict) and isinstance(payload.get("error"), dict):
        code = payload["error"].get("code")
        message = payload["error"].get("message")
    message = message or (payload if isinstance(payload, str) and payload else f"HTTP {status}")
    text = f"{what}: {message} (HTTP {status})"
    if status == 404:
        err: Error = NotFound(text)
    elif status in (401, 403):
        err = AuthError(text)
    elif status in (400, 405, 409, 413, 416, 422):
        err = UsageError(text)
    else:
        err = CommError(text)
    err.code = code or err.code
    return err


class Transport:
    """Talks JSON (and streams file bytes) with one server over a kept-alive connection
    (reconnects when it drops)."""

    def __init__(self, base_url: str, api_key: str, timeout: float = 60.0):
        parsed = urllib.parse.urlsplit(base_url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise UsageError(f"base_url: expected http(s)://host[:port], got {base_url!r}")
        self.base_url = base_url
        self._scheme = parsed.scheme
        self._host = parsed.hostname
        self._port = parsed.port
        self._prefix = parsed.path.rstrip("/")
        self._key = api_key
        self._timeout = timeout
        self._conn: Optional[http.client.HTTPConnection] = None

    def clone(self) -> "Transport":
        """A new transport to the same server with the same key (a connection of its own, for
        another thread)."""
        return Transport(self.base_url, self._key, self._timeout)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _connect(self) -> http.client.HTTPConnection:
        if self._conn is None:
            cls = (http.client.HTTPSConnection if self._scheme == "https"
                   else http.client.HTTPConnection)
            self._conn = cls(self._host, self._port, timeout=self._timeout)
        return self._conn

    def _send(self, path: str, url: str, headers: Dict[str, str], method: str = "GET",
              body: Optional[bytes] = None, with_type: bool = False):
        """One request: (status, body, Retry-After seconds or None[, Content-Type])."""
        last: Optional[BaseException] = None
        for _ in range(2):  # a kept-alive connection the server closed: retry once
            conn = self._connect()
            try:
                conn.request(method, url, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                if with_type:
                    return (resp.status, data, _retry_after(resp),
                            resp.getheader("Content-Type") or "")
                return resp.status, data, _retry_after(resp)
            except (ConnectionError, http.client.HTTPException, OSError) as e:
                self.close()
                last = e
        raise Unreachable(f"{method} {path}: cannot reach the server at {self.base_url}: "
                          f"{last}")

    def _headers(self, accept: str = "application/json") -> Dict[str, str]:
        return {"Authorization": "Bearer " + self._key, "Accept": accept,
                "User-Agent": "cohort-python-api/" + native.VERSION}

    def get(self, path: str, query: Optional[Mapping[str, Any]] = None) -> Any:
        """GET path?query -> the decoded JSON body; raises NotFound, AuthError, UsageError or
        CommError (with the server's message) otherwise. A 429 or 503 answer is retried
        after its Retry-After (at most 30 s, 5 times) before it becomes a CommError."""
        return self.call("GET", path, query)

    def get_raw(self, path: str, query: Optional[Mapping[str, Any]], accept: str
                ) -> Tuple[str, bytes]:
        """GET path?query with `accept` -> (the answer's media type, lower-case and without
        parameters; its body bytes) for a 2xx answer; errors as ``get``."""
        q = {k: v for k, v in (query or {}).items() if v is not None and v != ""}
        url = self._prefix + path + ("?" + urllib.parse.urlencode(q) if q else "")
        headers = self._headers(accept)
        for throttled in range(_THROTTLE_RETRIES + 1):
            status, answer, retry_after, ctype = self._send(path, url, headers, with_type=True)
            if status not in (429, 503) or throttled == _THROTTLE_RETRIES:
                break
            time.sleep(min(_MAX_WAIT_S, retry_after if retry_after is not None else 1.0))
        if status >= 300:
            raise _error_for(status, _decode(answer), f"GET {path}")
        return ctype.split(";", 1)[0].strip().lower(), answer

    def post(self, path: str, body: Any) -> Any:
        """POST path with a JSON body -> the decoded JSON answer; errors as ``get``."""
        return self.call("POST", path, None, body)

    def call(self, method: str, path: str, query: Optional[Mapping[str, Any]] = None,
             body: Any = None) -> Any:
        """`method` path?query with an optional JSON body -> the decoded JSON answer."""
        q = {k: v for k, v in (query or {}).items() if v is not None and v != ""}
        url = self._prefix + path + ("?" + urllib.parse.urlencode(q) if q else "")
        headers = self._headers()
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        for throttled in range(_THROTTLE_RETRIES + 1):
            status, answer, retry_after = self._send(path, url, headers, method, data)
            if status not in (429, 503) or throttled == _THROTTLE_RETRIES:
                break
            time.sleep(min(_MAX_WAIT_S, retry_after if retry_after is not None else 1.0))
        payload = _decode(answer)
        if status >= 300:
            raise _error_for(status, payload, f"{method} {path}")
        return payload

    def stream(self, path: str, headers: Optional[Mapping[str, str]] = None
               ) -> http.client.HTTPResponse:
        """GET path with extra `headers` (e.g. Range) -> the open response of a 2xx answer,
        for the caller to read to its end before the next request on this transport; the
        error of any other answer as ``get`` raises it (429 and 503 are retried the same
        way). An unreachable server (or a connection that drops before the answer) is a
        CommError."""
        url = self._prefix + path
        all_headers = self._headers("*/*")
        all_headers.update(headers or {})
        for throttled in range(_THROTTLE_RETRIES + 1):
            last: Optional[BaseException] = None
            resp = None
            for _ in range(2):
                conn = self._connect()
                try:
                    conn.request("GET", url, headers=all_headers)
                    resp = conn.getresponse()
                    break
                except (ConnectionError, http.client.HTTPException, OSError) as e:
                    self.close()
                    last = e
            if resp is None:
                raise Unreachable(f"GET {path}: cannot reach the server at {self.base_url}: "
                                  f"{last}")
            if 200 <= resp.status < 300:
                return resp
            try:
                answer = resp.read()
            except (ConnectionError, http.client.HTTPException, OSError) as e:
                self.close()
                raise Unreachable(f"GET {path}: the connection dropped: {e}") from e
            if resp.status in (429, 503) and throttled < _THROTTLE_RETRIES:
                retry_after = _retry_after(resp)
                time.sleep(min(_MAX_WAIT_S, retry_after if retry_after is not None else 1.0))
                continue
            raise _error_for(resp.status, _decode(answer), f"GET {path}")
        raise AssertionError("unreachable")


def _retry_after(resp: http.client.HTTPResponse) -> Optional[float]:
    retry = resp.getheader("Retry-After")
    try:
        return float(retry) if retry else None
    except ValueError:
        return None


def _decode(body: bytes) -> Any:
    try:
        return json.loads(body) if body else None
    except ValueError:
        return body.decode("utf-8", "replace")


def quote(segment: str) -> str:
    """One URL path segment, percent-encoded."""
    return urllib.parse.quote(str(segment), safe="")


def list_param(items: Iterable[str]) -> str:
    r"""One list parameter of the read API (``keys=``, ``writers=``, ``labels=``; docs/api.md
    "List parameters"): the items joined with ``,``, each ``,`` in an item written ``\,`` and
    each ``\`` written ``\\``, so that a key or label holding either (``acc,top5``) stays one
    item. Every request that names keys or writers builds its list here."""
    return ",".join(str(i).replace("\\", "\\\\").replace(",", "\\,") for i in items)


def split_list_param(text: str) -> List[str]:
    r"""The items of a list in list_param's syntax, as the server reads it (a command line's
    ``--keys acc\,top5,loss``): ``\,`` and ``\\`` unescaped, a ``\`` before anything else kept,
    empty items left out."""
    out: List[str] = []
    item: List[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text) and text[i + 1] in ",\\":
            item.append(text[i + 1])
            i += 1
        elif c == ",":
            if item:
                out.append("".join(item))
            item = []
        else:
            item.append(c)
        i += 1
    if item:
        out.append("".join(item))
    return out


_NON_FINITE = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}


def number(v: Any) -> float:
    """A metric value from the API: numbers, or the strings "NaN", "Infinity", "-Infinity"."""
    if isinstance(v, str):
        return _NON_FINITE[v]
    return float(v)
