"""Trellis plugins in Python: one file, standard library only (Python >= 3.9).

A plugin is a process Trellis starts; this module speaks the `trellis-plugin` v1
protocol (JSON-RPC 2.0, one object per line on stdin/stdout) for you. Declare what the
plugin contributes with decorators, then call ``plugin.run()``::

    from trellis_plugin import Plugin

    plugin = Plugin()

    @plugin.design("shell", label="Shell", kind="execute")
    def shell(call, facts, width, host):
        return {"call": [f"$ {facts['command']}"]}

    plugin.run()

Host functions (``host.notify``, ``host.set_section``, ``host.respond_permission``…)
are synchronous: they return the host's answer, or raise ``HostError`` (``.code`` is
the JSON-RPC error code, e.g. ``NOT_GRANTED``). Write logs to stderr (``log()``), never
to stdout: stdout carries the protocol, and a line on it that is not protocol gets the
plugin disconnected. See docs/plugins.md and docs/plugin-protocol.md.

Errors are reported where you look: a declaration used wrongly raises
``PluginDefinitionError`` at start, naming your line (``plugin.py:7: …``) and the name
meant; a handler that raises (a ``HostError`` too) is a failure in ``/status`` that names
your innermost line and function (``plugin.py:12 in on_call``), never the SDK's.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import sys
import traceback
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Deque, Dict, Iterable, List, Optional, TypedDict, Union

__all__ = [
    "Plugin",
    "Host",
    "HostError",
    "PluginDefinitionError",
    "log",
    "data_dir",
    "text_of",
    "EVENT_TYPES",
    "PROTOCOL_VERSION",
    "METHOD_NOT_FOUND",
    "INVALID_PARAMS",
    "NOT_GRANTED",
    "INVALID",
    "STORE",
    "Span",
    "Line",
    "Row",
    "Facts",
    "ToolCall",
    "Event",
    "Offer",
]

PROTOCOL_VERSION = 1

# The event types of docs/events.md (a test keeps this list equal to Trellis's).
EVENT_TYPES = frozenset([
    "session_started", "session_ended", "turn_started", "turn_ended", "message_chunk",
    "tool_call_created", "tool_call_updated", "permission_requested", "permission_resolved",
    "elicitation_requested", "elicitation_resolved", "elicitation_completed", "file_written",
    "terminal_exited", "plan", "plan_updated", "plan_removed", "usage", "mode_changed",
    "config_changed", "anomaly", "notice", "compaction", "commands_updated", "subagent",
    "session_message", "agent_sessions_listed", "title_changed", "agent_exited", "call_state",
    "warning",
])


# Under Trellis the protocol keeps the real stdout to itself from the moment the SDK is
# imported: `print()` (and a library's chatter on stdout) goes to the plugin's log (stderr)
# instead of breaking the connection.
_PROTOCOL_OUT: Any = None
if os.environ.get("TRELLIS_PLUGIN_PROTOCOL"):
    sys.stdout.flush()
    _PROTOCOL_OUT = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr


class PluginDefinitionError(Exception):
    """A decorator or declaration used wrongly: raised when the plugin starts, so the
    mistake is seen at once (Trellis shows the plugin's stderr), never silently ignored.
    Its message is one line that starts at the author's line (``plugin.py:7: …``)."""


_SDK_FILE = os.path.normcase(os.path.abspath(__file__))


def _excepthook(kind, error, tb, _before=sys.excepthook):
    # A declaration mistake left unhandled ends the plugin with its one line — which
    # starts at the author's line — not with a traceback through the SDK's frames.
    if isinstance(error, PluginDefinitionError):
        sys.stderr.write(f"PluginDefinitionError: {error}\n")
        sys.stderr.flush()
    else:
        _before(kind, error, tb)


sys.excepthook = _excepthook


def _is_sdk(filename: str) -> bool:
    return os.path.normcase(os.path.abspath(filename)) == _SDK_FILE


def _author_line() -> str:
    """``file.py:LINE`` of the innermost frame calling into this module from outside it."""
    f = sys._getframe(1)
    while f is not None and _is_sdk(f.f_code.co_filename):
        f = f.f_back
    return f"{os.path.basename(f.f_code.co_filename)}:{f.f_lineno}" if f is not None else "?"


def _definition_error(text: str) -> PluginDefinitionError:
    return PluginDefinitionError(f"{_author_line()}: {text}")


def _distance(a: str, b: str) -> int:
    """OSA edit distance (a swap of two letters counts one)."""
    d = [[i] + [0] * len(b) for i in range(len(a) + 1)]
    d[0] = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[len(a)][len(b)]


def _nearest(word: Any, names: Iterable[str]) -> Optional[str]:
    """The name ``word`` most likely misspells, if one is close (as close as a third of it)."""
    if not isinstance(word, str):
        return None
    best, most = None, max(1, len(word) // 3)
    for n in sorted(names):
        d = _distance(word, n)
        if d <= most:
            best, most = n, d - 1
    return best


def _check_event_types(where: str, types: Iterable[Any]) -> None:
    for t in types:
        if isinstance(t, str) and t in EVENT_TYPES:
            continue
        meant = _nearest(t, EVENT_TYPES)
        if meant:
            raise _definition_error(f"{where}: {t!r} is not an event type; did you mean {meant!r}?")
        known = ", ".join(repr(k) for k in sorted(EVENT_TYPES))
        raise _definition_error(f"{where}: {t!r} is not an event type (the event types: {known})")


def _handler(f: Any, where: str) -> Any:
    if not callable(f):
        raise _definition_error(f"@plugin.{where} decorates a function, got {f!r}")
    return f


def _usage(sig: inspect.Signature) -> str:
    parts = [p.name if p.default is p.empty else f"{p.name}={p.default!r}" for p in sig.parameters.values() if p.name != "self"]
    return "(" + ", ".join(parts) + ")"


def _checked(kind: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Checks the arguments of a ``Plugin`` method before it runs, raising
    ``PluginDefinitionError`` (never a bare ``TypeError``) that says what it takes.
    ``kind``: ``"handler"`` (``@plugin.x`` on a function, no parentheses), ``"decorator"``
    (``@plugin.x(…)``) or ``"call"`` (``plugin.x(…)``)."""

    def wrap(method: Callable[..., Any]) -> Callable[..., Any]:
        name = method.__name__
        sig = inspect.signature(method)
        params = [p for p in sig.parameters.values() if p.name != "self"]
        at = "@plugin." if kind != "call" else "plugin."
        if name == "__init__":
            at, name = "", "Plugin"
        usage = f"{at}{name}{_usage(sig)}"

        @functools.wraps(method)
        def checked(self: Any, *args: Any, **kwargs: Any) -> Any:
            if kind == "handler":
                if len(args) == 1 and not kwargs and callable(args[0]):
                    return method(self, *args)
                if len(args) == 1 and not kwargs:
                    raise _definition_error(
                        f"@plugin.{name} decorates a function, got {args[0]!r}: write @plugin.{name} without parentheses"
                    )
                raise _definition_error(f"@plugin.{name} takes no arguments: write @plugin.{name} without parentheses")
            if kind == "decorator" and len(args) == 1 and not kwargs and callable(args[0]):
                raise _definition_error(f"@plugin.{name} takes arguments: {usage}")
            names = [p.name for p in params]
            for k in kwargs:
                if k not in names:
                    meant = _nearest(k, names)
                    hint = f"; did you mean {meant!r}?" if meant else f": {usage}"
                    raise _definition_error(f"{at}{name} has no argument {k!r}{hint}")
            if len(args) > len(params):
                raise _definition_error(f"{at}{name} takes {len(params)} arguments, not {len(args)}: {usage}")
            given = set(names[: len(args)]) | set(kwargs)
            for p in params:
                if p.default is p.empty and p.name not in given:
                    raise _definition_error(f"{at}{name} needs {p.name}: {usage}")
                if p.name in kwargs and p.name in names[: len(args)]:
                    raise _definition_error(f"{at}{name} was given {p.name} twice: {usage}")
            return method(self, *args, **kwargs)

        return checked

    return wrap


# JSON-RPC error codes of the protocol.
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
NOT_GRANTED = -32001
INVALID = -32002
STORE = -32003


class Span(TypedDict, total=False):
    text: str
    tone: str  # normal, dim, accent, good, warn, bad, added, removed
    bold: bool


# A line is a string, or a list of spans (strings or Span objects).
Line = Union[str, List[Union[str, Span]]]


class Row(TypedDict, total=False):
    line: Line
    id: str  # set: the row is clickable (handed back to on_action)


class Facts(TypedDict):
    title: str
    command: Optional[str]
    paths: List[str]
    duration: Optional[float]
    exit_code: Optional[int]
    added: Optional[int]  # lines its diffs add and remove (None: no diff)
    removed: Optional[int]


class ToolCall(TypedDict, total=False):
    id: str
    title: str
    kind: str
    status: str  # pending, in_progress, completed, failed, …
    content: List[Dict[str, Any]]
    locations: List[Dict[str, Any]]
    raw_input: Any
    raw_output: Any
    name: str
    announced: bool  # false while only an update or a request named it
    status_history: List[Dict[str, Any]]
    permissions: List[Dict[str, Any]]  # the requests about it, in order
    turn: int
    anomalies: List[str]  # rules it broke (see docs/events.md)
    subagent: str  # the child session that made it (absent: the session itself)


class Event(TypedDict, total=False):
    schema: int
    t: float
    session: str
    type: str  # the event type, e.g. tool_call_updated
    call: ToolCall


class Offer(TypedDict, total=False):
    request_id: str
    session: Optional[str]
    call: ToolCall
    facts: Facts
    options: List[Dict[str, Any]]  # {optionId, name, kind}
    deadline_ms: int


class HostError(Exception):
    """A host function failed: ``code`` is the JSON-RPC error code."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


def log(*parts: Any) -> None:
    """Writes a line to the plugin's log (its stderr; shown in Trellis's /status)."""
    print(*parts, file=sys.stderr, flush=True)


def data_dir() -> "pathlib.Path":
    """The plugin's own directory for files it keeps (``$PLUGIN_DATA``: under Trellis's data
    directory, one per plugin, made before the plugin starts); a temporary one when the
    plugin runs outside Trellis."""
    import pathlib
    import tempfile

    d = os.environ.get("PLUGIN_DATA")
    path = pathlib.Path(d) if d else pathlib.Path(tempfile.gettempdir()) / f"trellis-plugin-{os.getpid()}"
    path.mkdir(parents=True, exist_ok=True)
    return path


def text_of(call: ToolCall) -> str:
    """The call's text output (its text content blocks, joined)."""
    return "".join(c.get("text", "") for c in call.get("content", []) if c.get("type") == "text")


class Host:
    """The host's functions. Calls are synchronous and answered by Trellis."""

    def __init__(self, conn: "_Conn") -> None:
        self._conn = conn

    def call(self, method: str, params: Optional[Dict[str, Any]] = None) -> Any:
        """Calls any host function by its protocol name."""
        return self._conn.request(method, params or {})

    # Session
    def session(self) -> Dict[str, Any]:
        return self.call("host/session")

    def calls(self) -> List[ToolCall]:
        return self.call("host/calls")

    def get_call(self, call_id: str) -> Optional[ToolCall]:
        return self.call("host/call", {"call_id": call_id})

    def call_state(self, call_id: str) -> Any:
        return self.call("host/call_state", {"call_id": call_id})

    def put_call_state(self, call_id: str, value: Any, merge: bool = False) -> None:
        self.call("host/put_call_state", {"call_id": call_id, "value": value, "merge": merge})

    def resolve_path(self, path: str) -> str:
        return self.call("host/resolve_path", {"path": path})

    def options(self) -> Any:
        return self.call("host/options")

    def report(self, what: str, message: str) -> None:
        self.call("host/report", {"what": what, "message": message})

    # UI
    def notify(self, text: str) -> None:
        self.call("host/notify", {"text": text})

    def open_inspector(self, call_id: str) -> None:
        self.call("host/open_inspector", {"call_id": call_id})

    def repaint(self) -> None:
        self.call("host/repaint")

    def section_shown(self, section: str) -> bool:
        return bool(self.call("ui/section_shown", {"id": section}))

    def set_section(self, section: str, rows: List[Union[Line, Row]], count: Optional[int] = None) -> None:
        self.call("ui/set_section", {"id": section, "body": {"rows": rows, "count": count}})

    def patch_section(self, section: str, patch: List[Dict[str, Any]]) -> None:
        self.call("ui/patch_section", {"id": section, "patch": patch})

    def set_status_item(self, item: str, line: Optional[Line]) -> None:
        self.call("ui/set_status_item", {"id": item, "line": line})

    def set_settings(self, rows: List[Dict[str, Any]]) -> None:
        self.call("ui/set_settings", {"rows": rows})

    def set_transform(self, transform: str, rewrites: List[Dict[str, str]]) -> None:
        self.call("ui/set_transform", {"id": transform, "rewrites": rewrites})

    # Permissions, store, driving the session
    def respond_permission(self, request_id: str, option_id: str, reason: Optional[str] = None) -> None:
        """Answers a request this plugin claimed with one of its options; ``reason`` (why,
        in your words) goes on the record, the call's card and the inspector."""
        p: Dict[str, Any] = {"request_id": request_id, "option_id": option_id}
        if reason:
            p["reason"] = reason
        self.call("permission/respond", p)

    def respond_question(self, request_id: str, action: str, content: Optional[Dict[str, Any]] = None) -> None:
        """Answers a question this plugin claimed: ``accept`` (with a form's values),
        ``decline`` or ``cancel``. An answer the form refuses is declined, saying why."""
        p: Dict[str, Any] = {"request_id": request_id, "action": action}
        if content is not None:
            p["content"] = content
        self.call("question/respond", p)

    def store_get(self, key: str) -> Any:
        return self.call("store/get", {"key": key})

    def store_put(self, key: str, value: Any) -> None:
        self.call("store/put", {"key": key, "value": value})

    def prompt(self, text: str) -> None:
        """Sends a prompt (queued until the running turn ends). Needs `drive`."""
        self.call("session/drive", {"action": "prompt", "text": text})

    def cancel_turn(self) -> None:
        self.call("session/drive", {"action": "cancel"})

    def set_mode(self, mode: str) -> None:
        self.call("session/drive", {"action": "set_mode", "mode": mode})

    def set_config_option(self, option_id: str, value: Union[str, bool]) -> None:
        """Sets one of the agent's config options (a choice's value, or a boolean)."""
        self.call("session/drive", {"action": "set_config_option", "id": option_id, "value": value})


class _Conn:
    """The JSON-RPC connection over stdin/stdout."""

    def __init__(self, inp: Any, out: Any) -> None:
        self.inp = inp
        self.out = out
        self.next_id = 1
        self.pending: Deque[Dict[str, Any]] = deque()

    def send(self, msg: Dict[str, Any]) -> None:
        msg["jsonrpc"] = "2.0"
        self.out.write(json.dumps(msg, separators=(",", ":"), ensure_ascii=False) + "\n")
        self.out.flush()

    def read(self) -> Optional[Dict[str, Any]]:
        while True:
            line = self.inp.readline()
            if not line:
                return None
            line = line.strip()
            if line:
                return json.loads(line)

    def request(self, method: str, params: Dict[str, Any]) -> Any:
        rid = self.next_id
        self.next_id += 1
        self.send({"id": rid, "method": method, "params": params})
        while True:
            msg = self.read()
            if msg is None:
                raise SystemExit(0)  # Trellis closed the connection
            if "method" not in msg and msg.get("id") == rid:
                if "error" in msg:
                    e = msg["error"]
                    raise HostError(e.get("code", 0), e.get("message", ""), e.get("data"))
                return msg.get("result")
            # Something else arrived meanwhile: handled after the current handler.
            self.pending.append(msg)


@dataclass
class _Registration:
    subscriptions: Optional[List[str]] = None
    call_kinds: Optional[List[str]] = None
    acp_payloads: bool = False
    sections: List[Dict[str, Any]] = field(default_factory=list)
    designs: List[Dict[str, Any]] = field(default_factory=list)
    transforms: List[Dict[str, Any]] = field(default_factory=list)
    status_items: List[Dict[str, Any]] = field(default_factory=list)
    commands: List[Dict[str, Any]] = field(default_factory=list)
    keys: List[Dict[str, Any]] = field(default_factory=list)


_Handler = Callable[..., Any]


class Plugin:
    """A plugin: declare handlers with the decorators, then ``run()``."""

    @_checked("call")
    def __init__(
        self,
        subscriptions: Optional[List[str]] = None,
        call_kinds: Optional[List[str]] = None,
        acp_payloads: bool = False,
    ) -> None:
        if subscriptions is not None:
            if isinstance(subscriptions, str) or not isinstance(subscriptions, (list, tuple)):
                raise _definition_error(f"Plugin(subscriptions=...) is a list of event types, not {subscriptions!r}")
            _check_event_types("Plugin(subscriptions=...)", subscriptions)
            subscriptions = list(subscriptions)
        self._reg = _Registration(subscriptions, call_kinds, acp_payloads)
        self._events: Dict[str, List[_Handler]] = {}
        self._designs: Dict[str, _Handler] = {}
        self._transforms: Dict[str, _Handler] = {}
        self._commands: Dict[str, _Handler] = {}
        self._keys: Dict[str, _Handler] = {}
        self._settings: Dict[str, _Handler] = {}
        self._clicks: Dict[str, _Handler] = {}
        self._permission: Optional[_Handler] = None
        self._question: Optional[_Handler] = None
        self._idle: List[_Handler] = []
        self._start: List[_Handler] = []
        self._visibility: List[_Handler] = []
        self.granted: List[str] = []
        self.options: Any = None
        self.name = ""
        self._conn: Optional[_Conn] = None
        self.host: Optional[Host] = None

    # ---- declarations ----
    # Each checks its arguments (`_checked`): a mistake is a PluginDefinitionError at start
    # that names the author's line, never a bare TypeError or a handler that never runs.

    def on(self, *event_types: Any) -> Any:
        """``@plugin.on("tool_call_updated")``: ``f(event, host)``; several types, or a list
        of them, at once. ``@plugin.on`` or ``@plugin.on()``: every event. A type that is not
        an event type is an error at start."""
        if len(event_types) == 1 and callable(event_types[0]):
            # `@plugin.on` without parentheses: every event.
            f = event_types[0]
            self._events.setdefault("*", []).append(f)
            return f
        types: List[Any] = []
        for t in event_types:
            types.extend(t if isinstance(t, (list, tuple, set, frozenset)) else [t])
        _check_event_types("@plugin.on", types)

        def deco(f: _Handler) -> _Handler:
            _handler(f, "on(...)")
            for t in types or ["*"]:
                self._events.setdefault(t, []).append(f)
            return f

        return deco

    @_checked("handler")
    def on_start(self, f: _Handler) -> _Handler:
        """``f(host)`` once the connection is set up (after ``initialize``)."""
        self._start.append(f)
        return f

    @_checked("handler")
    def on_idle(self, f: _Handler) -> _Handler:
        """``f(host)`` when Trellis has no more events for now: push what changed."""
        self._idle.append(f)
        return f

    @_checked("handler")
    def on_permission(self, f: _Handler) -> _Handler:
        """``f(offer, host) -> bool``: True claims the request (then answer it with
        ``host.respond_permission``), False passes it on. Needs `intercept-permissions`."""
        self._permission = f
        return f

    @_checked("handler")
    def on_question(self, f: _Handler) -> _Handler:
        """``f(offer, host) -> bool``: a question of the agent's (``offer["question"]``: its
        ``request_id``, ``mode``, a form's ``fields`` or a link). True claims it (then answer
        it with ``host.respond_question``), False passes it on. Needs `answer-questions`."""
        self._question = f
        return f

    @_checked("decorator")
    def section(self, id: str, title: str, max_rows: int = 10, collapsed: bool = False) -> Callable[[_Handler], _Handler]:
        """A sidebar section; the decorated ``f(row_id, host)`` runs when a clickable row
        is clicked. Push its rows with ``host.set_section``."""

        def deco(f: _Handler) -> _Handler:
            _handler(f, "section(...)")
            self._reg.sections.append({"id": id, "title": title, "max_rows": max_rows, "collapsed": collapsed})
            self._clicks[id] = f
            return f

        return deco

    @_checked("call")
    def add_section(self, id: str, title: str, max_rows: int = 10, collapsed: bool = False) -> None:
        """A sidebar section without a click handler."""
        self._reg.sections.append({"id": id, "title": title, "max_rows": max_rows, "collapsed": collapsed})

    @_checked("handler")
    def on_visibility(self, f: _Handler) -> _Handler:
        """``f(section_id, shown, host)`` when one of its sections is shown or hidden."""
        self._visibility.append(f)
        return f

    @_checked("decorator")
    def design(self, id: str, label: str, kind: Optional[str] = None, name: Optional[str] = None) -> Callable[[_Handler], _Handler]:
        """A card design for calls of a kind (or an agent's tool name): ``f(call, facts,
        width, host) -> {"call": [line…], "result": [line…]}``."""
        if not kind and not name:
            raise _definition_error(
                f"@plugin.design({id!r}, ...) applies to nothing: give kind= (a tool kind, e.g. 'execute') or name= (an agent's tool name)"
            )
        applies = {"kind": kind} if kind else {"name": name}

        def deco(f: _Handler) -> _Handler:
            _handler(f, "design(...)")
            self._reg.designs.append({"id": id, "label": label, "applies_to": applies})
            self._designs[id] = f
            return f

        return deco

    @_checked("decorator")
    def transform(self, id: str, label: str) -> Callable[[_Handler], _Handler]:
        """A per-call display transform: ``f(call, text, host) -> str | None``."""

        def deco(f: _Handler) -> _Handler:
            _handler(f, "transform(...)")
            self._reg.transforms.append({"id": id, "label": label})
            self._transforms[id] = f
            return f

        return deco

    @_checked("call")
    def rewrite(self, id: str, label: str, rewrites: List[Dict[str, str]]) -> None:
        """A declarative transform: ``[{"pattern": regex, "replace": text}]`` run by Trellis."""
        self._reg.transforms.append({"id": id, "label": label, "rewrites": rewrites})

    @_checked("call")
    def status_item(self, id: str, label: str) -> None:
        """A status-bar item; set it with ``host.set_status_item``."""
        self._reg.status_items.append({"id": id, "label": label})

    @_checked("decorator")
    def command(self, name: str, description: str) -> Callable[[_Handler], _Handler]:
        """``/name args`` at the prompt: ``f(args, host)``."""

        def deco(f: _Handler) -> _Handler:
            _handler(f, "command(...)")
            self._reg.commands.append({"name": name, "description": description})
            self._commands[name] = f
            return f

        return deco

    @_checked("decorator")
    def key(self, id: str, keys: str, label: str) -> Callable[[_Handler], _Handler]:
        """A key in the transcript: ``f(host)``."""

        def deco(f: _Handler) -> _Handler:
            _handler(f, "key(...)")
            self._reg.keys.append({"id": id, "keys": keys, "label": label})
            self._keys[id] = f
            return f

        return deco

    @_checked("decorator")
    def setting(self, row: str) -> Callable[[_Handler], _Handler]:
        """``f(choice, host)`` when the user applies a choice of settings row ``row``
        (rows are pushed with ``host.set_settings``)."""

        def deco(f: _Handler) -> _Handler:
            _handler(f, "setting(...)")
            self._settings[row] = f
            return f

        return deco

    # ---- the loop ----

    def run(self, inp: Any = None, out: Any = None) -> None:
        """Serves Trellis until it closes the connection. The protocol keeps the real stdout
        to itself: ``print()`` (and anything else written to stdout, a library's chatter)
        goes to the plugin's log (stderr) instead of breaking the connection."""
        conn = _Conn(inp or sys.stdin, out or _PROTOCOL_OUT or sys.stdout)
        self._conn = conn
        self.host = Host(conn)
        while True:
            msg = conn.pending.popleft() if conn.pending else conn.read()
            if msg is None:
                return
            self._handle(msg)
            if msg.get("method") == "shutdown":
                return

    def _reply(self, rid: Any, result: Any = None, error: Optional[Dict[str, Any]] = None) -> None:
        assert self._conn is not None
        if error is not None:
            self._conn.send({"id": rid, "error": error})
        else:
            self._conn.send({"id": rid, "result": result})

    def _handle(self, msg: Dict[str, Any]) -> None:
        method = msg.get("method")
        params = msg.get("params") or {}
        rid = msg.get("id")
        host = self.host
        try:
            if method == "initialize":
                if PROTOCOL_VERSION not in params.get("versions", []):
                    self._reply(rid, error={"code": INVALID_PARAMS, "message": "this plugin speaks trellis-plugin v1 only"})
                    return
                self.granted = params.get("granted", [])
                self.options = params.get("options")
                self.name = params.get("name", "")
                reg = {k: v for k, v in self._reg.__dict__.items() if v is not None}
                # Without explicit subscriptions, the events the handlers take: a plugin
                # is sent (and parses) only what it handles; `@plugin.on()` takes all.
                if self._reg.subscriptions is None and "*" not in self._events:
                    reg["subscriptions"] = sorted(self._events)
                self._reply(rid, {"version": PROTOCOL_VERSION, "registration": reg})
                for f in self._start:
                    f(host)
            elif method == "event":
                for f in self._events.get(params.get("type", ""), []) + self._events.get("*", []):
                    f(params, host)
            elif method == "idle":
                for f in self._idle:
                    f(host)
            elif method == "action":
                self._action(params, host)
            elif method == "permission/offer":
                claim = bool(self._permission(params, host)) if self._permission else False
                self._reply(rid, {"claim": claim})
            elif method == "question/offer":
                claim = bool(self._question(params, host)) if self._question else False
                self._reply(rid, {"claim": claim})
            elif method == "render/card":
                f = self._designs.get(params.get("design", ""))
                lines = f(params["call"], params["facts"], params["width"], host) if f else None
                self._reply(rid, lines or {"call": []})
            elif method == "render/transform":
                f = self._transforms.get(params.get("id", ""))
                text = f(params["call"], params["text"], host) if f else None
                self._reply(rid, {"text": text})
            elif method == "sync":
                self._reply(rid, {})  # everything before it is handled
            elif method == "shutdown":
                return
            elif rid is not None:
                self._reply(rid, error={"code": METHOD_NOT_FOUND, "message": f"unknown method {method}"})
        except Exception as e:  # the handler failed: Trellis records it, the plugin goes on
            # Where it was raised: the author's innermost frame, not the SDK's (a
            # HostError is raised in here, answering the author's call).
            tb = traceback.TracebackException.from_exception(e)
            frames = [f for f in tb.stack if not _is_sdk(f.filename)] or list(tb.stack)
            tb.stack = traceback.StackSummary.from_list(frames)
            log(f"{method}: {e!r}")
            sys.stderr.write("".join(tb.format()))
            sys.stderr.flush()
            where = ""
            if frames:
                last = frames[-1]
                where = f" ({os.path.basename(last.filename)}:{last.lineno} in {last.name})"
            message = f"{type(e).__name__}: {e}{where}"
            if rid is not None:
                self._reply(rid, error={"code": -32000, "message": message})
            elif self._conn is not None:
                # A notification has no answer to carry the error: say it is a failure.
                what = method if method != "event" else f"event {params.get('type', '')}"
                self._conn.send({"method": "host/failed", "params": {"what": what, "message": message}})

    def _action(self, a: Dict[str, Any], host: Optional[Host]) -> None:
        kind = a.get("kind")
        if kind == "command" and a.get("name") in self._commands:
            self._commands[a["name"]](a.get("args", ""), host)
        elif kind == "key" and a.get("id") in self._keys:
            self._keys[a["id"]](host)
        elif kind == "setting" and a.get("row") in self._settings:
            self._settings[a["row"]](a.get("choice"), host)
        elif kind == "row_click" and a.get("section") in self._clicks:
            self._clicks[a["section"]](a.get("row"), host)
        elif kind == "visibility":
            for f in self._visibility:
                f(a.get("section"), a.get("shown"), host)
