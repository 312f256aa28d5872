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

import { createInterface } from "node:readline";

export const PROTOCOL_VERSION = 1;
export const METHOD_NOT_FOUND = -32601;
export const INVALID_PARAMS = -32602;
export const NOT_GRANTED = -32001;
export const INVALID = -32002;
export const STORE = -32003;

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
        const { resolve, reject } = this.waiting.get(msg.id);
        this.waiting.delete(msg.id);
        if (msg.error) reject(new HostError(msg.error.code, msg.error.message, msg.error.data));
        else resolve(msg.result);
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
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
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
  respondPermission(requestId, optionId) { return this.call("permission/respond", { request_id: requestId, option_id: optionId }); }
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
  constructor({ subscriptions = null, callKinds = null, acpPayloads = false } = {}) {
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

  /** `fn(event, host)` for events of these types (none: every event). */
  on(types, fn) {
    for (const t of [].concat(types ?? "*")) {
      if (!this.handlers.events.has(t)) this.handlers.events.set(t, []);
      this.handlers.events.get(t).push(fn);
    }
    return this;
  }
  onStart(fn) { this.handlers.start.push(fn); return this; }
  onIdle(fn) { this.handlers.idle.push(fn); return this; }
  onVisibility(fn) { this.handlers.visibility.push(fn); return this; }
  /** `fn(offer, host) -> boolean`: true claims (answer with host.respondPermission). */
  onPermission(fn) { this.permission = fn; return this; }
  /** `fn(offer, host) -> boolean`: true claims the question (answer with host.respondQuestion). */
  onQuestion(fn) { this.question = fn; return this; }
  section(id, title, { maxRows = 10, collapsed = false } = {}, onClick = null) {
    this.registration.sections.push({ id, title, max_rows: maxRows, collapsed });
    if (onClick) this.clicks.set(id, onClick);
    return this;
  }
  /** `fn(call, facts, width, host) -> {call: Line[], result?: Line[]}`. */
  design(id, label, appliesTo, fn) {
    this.registration.designs.push({ id, label, applies_to: appliesTo });
    this.designs.set(id, fn);
    return this;
  }
  /** A per-call transform: `fn(call, text, host) -> string | null`. */
  transform(id, label, fn) {
    this.registration.transforms.push({ id, label });
    this.transforms.set(id, fn);
    return this;
  }
  /** A declarative transform Trellis runs itself. */
  rewrite(id, label, rewrites) {
    this.registration.transforms.push({ id, label, rewrites });
    return this;
  }
  statusItem(id, label) { this.registration.status_items.push({ id, label }); return this; }
  command(name, description, fn) {
    this.registration.commands.push({ name, description });
    this.commands.set(name, fn);
    return this;
  }
  key(id, keys, label, fn) {
    this.registration.keys.push({ id, keys, label });
    this.keys.set(id, fn);
    return this;
  }
  setting(row, fn) { this.settings.set(row, fn); return this; }

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
      log(`${method}: ${e?.stack ?? e}`);
      // Where it was raised: the first frame of the stack outside this SDK.
      const frame = String(e?.stack ?? "").split("\n").slice(1)
        .find((l) => !l.includes("trellis-plugin.mjs"));
      const at = frame ? ` (${frame.trim().replace(/^at /, "")})` : "";
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
