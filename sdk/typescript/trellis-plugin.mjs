// Trellis plugins in JavaScript/TypeScript: ESM, no dependencies, Node >= 20.
// Types: trellis-plugin.d.mts. Protocol: docs/plugin-protocol.md (trellis-plugin v1).
//
//   import { Plugin } from "./lib/trellis-plugin.mjs";
//   const plugin = new Plugin({ subscriptions: ["tool_call_updated"] });
//   plugin.on("tool_call_updated", async (event, host) => { ... });
//   plugin.run();
//
// Host functions return promises. Handlers run one at a time, in order (an async
// handler is awaited before the next message is handled); the host's answers arrive
// meanwhile. Log with `log()` (stderr); stdout carries the protocol only.
//
// Errors are reported where you look: a registration used wrongly throws
// `PluginDefinitionError` at start, naming your line (`plugin.mjs:7: …`) and the name
// meant; a handler that throws (a `HostError` too) is a failure in /status that names
// your innermost line and function (`plugin.mjs:12 in onCall`), never the SDK's.

import { createInterface } from "node:readline";

/** This file, to tell the SDK's stack frames from the author's. */
const SDK_URL = import.meta.url;

export const PROTOCOL_VERSION = 1;
export const METHOD_NOT_FOUND = -32601;
export const INVALID_PARAMS = -32602;
export const NOT_GRANTED = -32001;
export const INVALID = -32002;
export const STORE = -32003;

/** The event types of docs/events.md (a test keeps this list equal to Trellis's). */
export const EVENT_TYPES = Object.freeze([
  "session_started", "session_ended", "turn_started", "turn_ended", "message_chunk",
  "tool_call_created", "tool_call_updated", "permission_requested", "permission_resolved",
  "elicitation_requested", "elicitation_resolved", "elicitation_completed", "file_written",
  "terminal_exited", "plan", "plan_updated", "plan_removed", "usage", "mode_changed",
  "config_changed", "anomaly", "notice", "compaction", "commands_updated", "subagent",
  "session_message", "agent_sessions_listed", "title_changed", "agent_exited", "call_state",
  "warning",
]);

/** The author's innermost stack frame in `stack` (none of this SDK's, none of Node's):
 * `file:line` and, when it has one, the function (`plugin.mjs:12 in onCall`). */
function authorFrame(stack) {
  for (const l of String(stack ?? "").split("\n").slice(1)) {
    const m = /^\s*at (?:async )?(?:(.*?) \()?(.+?):(\d+):\d+\)?$/.exec(l);
    if (!m || m[2].startsWith("node:") || m[2] === SDK_URL || m[2].endsWith("/trellis-plugin.mjs")) continue;
    const file = m[2].slice(m[2].lastIndexOf("/") + 1);
    const fn = m[1] && !m[1].includes(SDK_URL) ? m[1] : null;
    return fn ? `${file}:${m[3]} in ${fn}` : `${file}:${m[3]}`;
  }
  return null;
}

/** The stack without this SDK's frames (what a failure logs). */
function authorStack(stack) {
  const lines = String(stack ?? "").split("\n");
  const own = lines.slice(1).filter((l) => !l.includes(SDK_URL) && !l.includes("/trellis-plugin.mjs:"));
  return [lines[0], ...own].join("\n");
}

/** A registration used wrongly: thrown when the plugin starts, its message one line that
 * starts at the author's line (`plugin.mjs:7: …`). */
export class PluginDefinitionError extends Error {
  constructor(message) {
    super(message);
    this.name = "PluginDefinitionError";
  }
}

/** Throws a PluginDefinitionError located at the author's call of `entry` (the public
 * method they called); its stack starts there. */
function fail(entry, text) {
  const probe = {};
  Error.captureStackTrace(probe, entry);
  const frame = authorFrame(`-\n${probe.stack.split("\n").slice(1).join("\n")}`);
  const at = frame ? frame.replace(/ in .*$/, "") : "?";
  const e = new PluginDefinitionError(`${at}: ${text}`);
  // Its stack: the author's frame alone, so that what Node prints of it ends with the
  // message and that line (the last lines of stderr are what Trellis shows).
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 1;
  Error.captureStackTrace(e, entry);
  Error.stackTraceLimit = limit;
  throw e;
}

/** OSA edit distance (a swap of two letters counts one). */
function distance(a, b) {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.length][b.length];
}

/** The name `word` most likely misspells, if one is close. */
function nearest(word, names) {
  if (typeof word !== "string") return null;
  let best = null;
  let bestD = Math.max(1, Math.floor(word.length / 3)) + 1;
  for (const n of [...names].sort()) {
    const dd = distance(word, n);
    if (dd < bestD) [best, bestD] = [n, dd];
  }
  return best;
}

/** How a value reads in a message. */
function what(v) {
  if (v === undefined || v === null) return String(v);
  if (typeof v === "function") return "a function";
  if (Array.isArray(v)) return "an array";
  if (typeof v === "object") return "an object";
  const text = JSON.stringify(v);
  return text.length > 40 ? `${text.slice(0, 39)}…` : text;
}

const KINDS = { string: "a string", function: "a function", object: "an object", array: "an array", boolean: "true or false" };

/** Checks `args` (`[name, value, type, optional?]`) of the call `usage` of `entry`. */
function check(entry, usage, args) {
  for (const [name, value, type, optional] of args) {
    if (optional && (value === undefined || value === null)) continue;
    const ok = type === "array" ? Array.isArray(value)
      : type === "object" ? typeof value === "object" && value !== null && !Array.isArray(value)
      : typeof value === type;
    if (!ok) fail(entry, `${usage}: ${name} is ${what(value)}, not ${KINDS[type]}`);
  }
}

/** Checks that object `o` (argument `name` of `usage`) has only the `known` fields. */
function fields(entry, usage, name, o, known) {
  for (const k of Object.keys(o ?? {})) {
    if (known.includes(k)) continue;
    const meant = nearest(k, known);
    const hint = meant ? `; did you mean ${JSON.stringify(meant)}?` : ` (it takes ${known.join(", ")})`;
    fail(entry, `${usage}: ${name} has no field ${JSON.stringify(k)}${hint}`);
  }
}

/** Checks event types, naming the one that is not. */
function eventTypes(entry, usage, types) {
  for (const t of types) {
    if (EVENT_TYPES.includes(t)) continue;
    const meant = nearest(t, EVENT_TYPES);
    if (meant) fail(entry, `${usage}: ${JSON.stringify(t)} is not an event type; did you mean ${JSON.stringify(meant)}?`);
    fail(entry, `${usage}: ${JSON.stringify(t)} is not an event type (the event types: ${[...EVENT_TYPES].sort().join(", ")})`);
  }
}

/** A host function failed; `code` is the JSON-RPC error code. */
export class HostError extends Error {
  constructor(code, message, data) {
    super(message);
    this.name = "HostError";
    this.code = code;
    this.data = data;
  }
}

/** Writes a line to the plugin's log (stderr; shown in /status). */
export function log(...parts) {
  process.stderr.write(parts.map((p) => (typeof p === "string" ? p : JSON.stringify(p))).join(" ") + "\n");
}

/** The call's text output (its text content blocks, joined). */
export function textOf(call) {
  return (call.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("");
}

class Connection {
  constructor(input, output) {
    this.output = output;
    this.nextId = 1;
    this.waiting = new Map();
    this.queue = [];
    this.wake = null;
    this.closed = false;
    const rl = createInterface({ input, crlfDelay: Infinity });
    rl.on("line", (line) => {
      if (!line.trim()) return;
      let msg;
      try {
        msg = JSON.parse(line);
      } catch (e) {
        log(`trellis-plugin: a line from Trellis is not JSON: ${e}`);
        return;
      }
      if (msg.method === undefined && this.waiting.has(msg.id)) {
        const { resolve, reject, origin } = this.waiting.get(msg.id);
        this.waiting.delete(msg.id);
        if (msg.error) {
          // The answer arrives on its own: the error's stack is that of the call that
          // asked, so a failure names the author's line, not this callback's.
          const e = new HostError(msg.error.code, msg.error.message, msg.error.data);
          e.stack = `${e.name}: ${e.message}\n${origin.stack.split("\n").slice(1).join("\n")}`;
          reject(e);
        } else resolve(msg.result);
        return;
      }
      this.queue.push(msg);
      this.wake?.();
    });
    rl.on("close", () => {
      this.closed = true;
      for (const { reject } of this.waiting.values()) reject(new HostError(0, "Trellis closed the connection"));
      this.waiting.clear();
      this.wake?.();
    });
  }

  send(msg) {
    this.output.write(JSON.stringify({ jsonrpc: "2.0", ...msg }) + "\n");
  }

  request(method, params) {
    const id = this.nextId++;
    const origin = {};
    Error.captureStackTrace(origin, Connection.prototype.request);
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject, origin });
      this.send({ id, method, params: params ?? {} });
    });
  }

  async next() {
    while (this.queue.length === 0) {
      if (this.closed) return null;
      await new Promise((r) => (this.wake = r));
      this.wake = null;
    }
    return this.queue.shift();
  }
}

/** The host's functions (each returns a promise of Trellis's answer). */
export class Host {
  constructor(conn) {
    this.conn = conn;
  }
  call(method, params) {
    return this.conn.request(method, params);
  }
  session() { return this.call("host/session"); }
  calls() { return this.call("host/calls"); }
  getCall(callId) { return this.call("host/call", { call_id: callId }); }
  callState(callId) { return this.call("host/call_state", { call_id: callId }); }
  putCallState(callId, value, merge = false) { return this.call("host/put_call_state", { call_id: callId, value, merge }); }
  resolvePath(path) { return this.call("host/resolve_path", { path }); }
  options() { return this.call("host/options"); }
  report(what, message) { return this.call("host/report", { what, message }); }
  notify(text) { return this.call("host/notify", { text }); }
  openInspector(callId) { return this.call("host/open_inspector", { call_id: callId }); }
  repaint() { return this.call("host/repaint"); }
  sectionShown(id) { return this.call("ui/section_shown", { id }); }
  setSection(id, rows, count = null) { return this.call("ui/set_section", { id, body: { rows, count } }); }
  patchSection(id, patch) { return this.call("ui/patch_section", { id, patch }); }
  setStatusItem(id, line) { return this.call("ui/set_status_item", { id, line }); }
  setSettings(rows) { return this.call("ui/set_settings", { rows }); }
  setTransform(id, rewrites) { return this.call("ui/set_transform", { id, rewrites }); }
  respondPermission(requestId, optionId, reason) {
    const p = { request_id: requestId, option_id: optionId };
    if (reason) p.reason = reason;
    return this.call("permission/respond", p);
  }
  /** Answers a claimed question: "accept" (with a form's values), "decline" or "cancel". */
  respondQuestion(requestId, action, content = undefined) {
    const p = { request_id: requestId, action };
    if (content !== undefined) p.content = content;
    return this.call("question/respond", p);
  }
  storeGet(key) { return this.call("store/get", { key }); }
  storePut(key, value) { return this.call("store/put", { key, value }); }
  prompt(text) { return this.call("session/drive", { action: "prompt", text }); }
  cancelTurn() { return this.call("session/drive", { action: "cancel" }); }
  setMode(mode) { return this.call("session/drive", { action: "set_mode", mode }); }
  setConfigOption(id, value) { return this.call("session/drive", { action: "set_config_option", id, value }); }
}

// Under Trellis the protocol keeps stdout to itself from the moment the SDK is loaded:
// console.log (and anything else written to stdout) goes to the plugin's log (stderr)
// instead of breaking the connection.
const protocolWrite = process.env.TRELLIS_PLUGIN_PROTOCOL
  ? (() => {
      const write = process.stdout.write.bind(process.stdout);
      process.stdout.write = process.stderr.write.bind(process.stderr);
      return write;
    })()
  : null;

/** A plugin: declare handlers, then `run()`. */
export class Plugin {
  constructor(options = {}) {
    const usage = "new Plugin(options)";
    check(Plugin, usage, [["options", options, "object"]]);
    for (const k of Object.keys(options)) {
      const known = ["subscriptions", "callKinds", "acpPayloads"];
      if (known.includes(k)) continue;
      const meant = nearest(k, known);
      fail(Plugin, `${usage}: no option ${JSON.stringify(k)}${meant ? `; did you mean ${JSON.stringify(meant)}?` : ` (the options: ${known.join(", ")})`}`);
    }
    const { subscriptions = null, callKinds = null, acpPayloads = false } = options;
    check(Plugin, usage, [["subscriptions", subscriptions, "array", true], ["callKinds", callKinds, "array", true], ["acpPayloads", acpPayloads, "boolean"]]);
    if (subscriptions) eventTypes(Plugin, "new Plugin({ subscriptions })", subscriptions);
    this.registration = {
      subscriptions,
      call_kinds: callKinds,
      acp_payloads: acpPayloads,
      sections: [],
      designs: [],
      transforms: [],
      status_items: [],
      commands: [],
      keys: [],
    };
    this.handlers = { events: new Map(), start: [], idle: [], visibility: [] };
    this.designs = new Map();
    this.transforms = new Map();
    this.commands = new Map();
    this.keys = new Map();
    this.settings = new Map();
    this.clicks = new Map();
    this.permission = null;
    this.question = null;
    this.name = "";
    this.granted = [];
    this.options = null;
    this.host = null;
  }

  // Each registration checks its arguments: a mistake throws PluginDefinitionError at
  // start, naming the author's line, instead of a handler that never runs.

  /** `fn(event, host)` for events of these types (null or "*": every event). */
  on(types, fn) {
    const all = types === null || types === undefined || types === "*";
    const list = all ? ["*"] : [].concat(types);
    if (!all) eventTypes(Plugin.prototype.on, "plugin.on", list);
    check(Plugin.prototype.on, "plugin.on(types, fn)", [["fn", fn, "function"]]);
    for (const t of list) {
      if (!this.handlers.events.has(t)) this.handlers.events.set(t, []);
      this.handlers.events.get(t).push(fn);
    }
    return this;
  }
  onStart(fn) {
    check(Plugin.prototype.onStart, "plugin.onStart(fn)", [["fn", fn, "function"]]);
    this.handlers.start.push(fn);
    return this;
  }
  onIdle(fn) {
    check(Plugin.prototype.onIdle, "plugin.onIdle(fn)", [["fn", fn, "function"]]);
    this.handlers.idle.push(fn);
    return this;
  }
  onVisibility(fn) {
    check(Plugin.prototype.onVisibility, "plugin.onVisibility(fn)", [["fn", fn, "function"]]);
    this.handlers.visibility.push(fn);
    return this;
  }
  /** `fn(offer, host) -> boolean`: true claims (answer with host.respondPermission). */
  onPermission(fn) {
    check(Plugin.prototype.onPermission, "plugin.onPermission(fn)", [["fn", fn, "function"]]);
    this.permission = fn;
    return this;
  }
  /** `fn(offer, host) -> boolean`: true claims the question (answer with host.respondQuestion). */
  onQuestion(fn) {
    check(Plugin.prototype.onQuestion, "plugin.onQuestion(fn)", [["fn", fn, "function"]]);
    this.question = fn;
    return this;
  }
  section(id, title, opts = {}, onClick = null) {
    const usage = "plugin.section(id, title, opts, onClick)";
    check(Plugin.prototype.section, usage, [["id", id, "string"], ["title", title, "string"], ["opts", opts, "object", true], ["onClick", onClick, "function", true]]);
    fields(Plugin.prototype.section, usage, "opts", opts, ["maxRows", "collapsed"]);
    const { maxRows = 10, collapsed = false } = opts ?? {};
    this.registration.sections.push({ id, title, max_rows: maxRows, collapsed });
    if (onClick) this.clicks.set(id, onClick);
    return this;
  }
  /** `fn(call, facts, width, host) -> {call: Line[], result?: Line[]}`. */
  design(id, label, appliesTo, fn) {
    const usage = "plugin.design(id, label, appliesTo, fn)";
    check(Plugin.prototype.design, usage, [["id", id, "string"], ["label", label, "string"], ["appliesTo", appliesTo, "object"]]);
    fields(Plugin.prototype.design, usage, "appliesTo", appliesTo, ["kind", "name"]);
    if (typeof appliesTo.kind !== "string" && typeof appliesTo.name !== "string") {
      fail(Plugin.prototype.design, `${usage}: appliesTo is { kind } (a tool kind, e.g. "execute") or { name } (an agent's tool name)`);
    }
    check(Plugin.prototype.design, usage, [["fn", fn, "function"]]);
    this.registration.designs.push({ id, label, applies_to: appliesTo });
    this.designs.set(id, fn);
    return this;
  }
  /** A per-call transform: `fn(call, text, host) -> string | null`. */
  transform(id, label, fn) {
    check(Plugin.prototype.transform, "plugin.transform(id, label, fn)", [["id", id, "string"], ["label", label, "string"], ["fn", fn, "function"]]);
    this.registration.transforms.push({ id, label });
    this.transforms.set(id, fn);
    return this;
  }
  /** A declarative transform Trellis runs itself. */
  rewrite(id, label, rewrites) {
    check(Plugin.prototype.rewrite, "plugin.rewrite(id, label, rewrites)", [["id", id, "string"], ["label", label, "string"], ["rewrites", rewrites, "array"]]);
    this.registration.transforms.push({ id, label, rewrites });
    return this;
  }
  statusItem(id, label) {
    check(Plugin.prototype.statusItem, "plugin.statusItem(id, label)", [["id", id, "string"], ["label", label, "string"]]);
    this.registration.status_items.push({ id, label });
    return this;
  }
  command(name, description, fn) {
    check(Plugin.prototype.command, "plugin.command(name, description, fn)", [["name", name, "string"], ["description", description, "string"], ["fn", fn, "function"]]);
    this.registration.commands.push({ name, description });
    this.commands.set(name, fn);
    return this;
  }
  key(id, keys, label, fn) {
    check(Plugin.prototype.key, "plugin.key(id, keys, label, fn)", [["id", id, "string"], ["keys", keys, "string"], ["label", label, "string"], ["fn", fn, "function"]]);
    this.registration.keys.push({ id, keys, label });
    this.keys.set(id, fn);
    return this;
  }
  setting(row, fn) {
    check(Plugin.prototype.setting, "plugin.setting(row, fn)", [["row", row, "string"], ["fn", fn, "function"]]);
    this.settings.set(row, fn);
    return this;
  }

  /** Serves Trellis until it closes the connection. */
  async run(input = process.stdin, output = process.stdout) {
    if (output === process.stdout && protocolWrite) output = { write: protocolWrite };
    const conn = new Connection(input, output);
    this.host = new Host(conn);
    for (;;) {
      const msg = await conn.next();
      if (msg === null) return;
      await this.#handle(conn, msg);
      if (msg.method === "shutdown") {
        process.exit(0);
      }
    }
  }

  async #handle(conn, msg) {
    const { id, method } = msg;
    const p = msg.params ?? {};
    const host = this.host;
    const reply = (result) => conn.send({ id, result });
    try {
      switch (method) {
        case "initialize": {
          if (!(p.versions ?? []).includes(PROTOCOL_VERSION)) {
            conn.send({ id, error: { code: INVALID_PARAMS, message: "this plugin speaks trellis-plugin v1 only" } });
            return;
          }
          this.name = p.name;
          this.granted = p.granted ?? [];
          this.options = p.options ?? null;
          const reg = Object.fromEntries(Object.entries(this.registration).filter(([, v]) => v !== null));
          // Without explicit subscriptions, the events the handlers take: a plugin is sent
          // (and parses) only what it handles; `on("*", …)` or `on(null, …)` takes all.
          if (this.registration.subscriptions === null && !this.handlers.events.has("*")) {
            reg.subscriptions = [...this.handlers.events.keys()].sort();
          }
          reply({ version: PROTOCOL_VERSION, registration: reg });
          for (const f of this.handlers.start) await f(host);
          return;
        }
        case "event": {
          const fns = [...(this.handlers.events.get(p.type) ?? []), ...(this.handlers.events.get("*") ?? [])];
          for (const f of fns) await f(p, host);
          return;
        }
        case "idle":
          for (const f of this.handlers.idle) await f(host);
          return;
        case "action":
          return await this.#action(p, host);
        case "permission/offer":
          reply({ claim: this.permission ? Boolean(await this.permission(p, host)) : false });
          return;
        case "question/offer":
          reply({ claim: this.question ? Boolean(await this.question(p, host)) : false });
          return;
        case "render/card": {
          const f = this.designs.get(p.design);
          reply((f && (await f(p.call, p.facts, p.width, host))) || { call: [] });
          return;
        }
        case "render/transform": {
          const f = this.transforms.get(p.id);
          const text = f ? await f(p.call, p.text, host) : null;
          reply({ text: text ?? null });
          return;
        }
        case "sync":
          reply({}); // everything before it is handled
          return;
        case "shutdown":
          return;
        default:
          if (id !== undefined) conn.send({ id, error: { code: METHOD_NOT_FOUND, message: `unknown method ${method}` } });
      }
    } catch (e) {
      // Where it was raised: the author's innermost frame, not the SDK's (a HostError's
      // stack is that of the author's call of the host function).
      log(`${method}: ${e?.stack ? authorStack(e.stack) : e}`);
      const frame = authorFrame(e?.stack);
      const at = frame ? ` (${frame})` : "";
      const message = `${e?.name ?? "Error"}: ${e?.message ?? e}${at}`;
      if (id !== undefined) conn.send({ id, error: { code: -32000, message } });
      // A notification has no answer to carry the error: say it is a failure.
      else conn.send({ method: "host/failed", params: { what: method === "event" ? `event ${p.type ?? ""}` : method, message } });
    }
  }

  async #action(a, host) {
    switch (a.kind) {
      case "command": return this.commands.get(a.name)?.(a.args ?? "", host);
      case "key": return this.keys.get(a.id)?.(host);
      case "setting": return this.settings.get(a.row)?.(a.choice, host);
      case "row_click": return this.clicks.get(a.section)?.(a.row, host);
      case "visibility":
        for (const f of this.handlers.visibility) await f(a.section, a.shown, host);
    }
  }
}
