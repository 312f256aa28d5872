// Types of trellis-plugin.mjs: the trellis-plugin v1 protocol for TypeScript plugins.
// The JSON shapes are those of docs/plugin-protocol.schema.json.

export const PROTOCOL_VERSION: 1;
export const METHOD_NOT_FOUND: -32601;
export const INVALID_PARAMS: -32602;
export const NOT_GRANTED: -32001;
export const INVALID: -32002;
export const STORE: -32003;

export type Tone = "normal" | "dim" | "accent" | "good" | "warn" | "bad" | "added" | "removed";
export interface Span {
  text: string;
  tone?: Tone;
  bold?: boolean;
}
/** A line: a string, or spans (strings or styled spans). */
export type Line = string | Array<string | Span>;
export interface Row {
  line: Line;
  /** Set: the row is clickable (handed back to the section's click handler). */
  id?: string | null;
}

export type ToolKind =
  | "read" | "edit" | "delete" | "move" | "search" | "execute" | "think" | "fetch"
  | "switch_mode" | "other";
export type ToolStatus = "pending" | "in_progress" | "completed" | "failed" | "cancelled";

export type ToolContent =
  | { type: "text"; text: string }
  | { type: "block"; block: unknown }
  | { type: "diff"; path: string; old_text?: string; new_text: string }
  | { type: "terminal"; terminal_id: string };

export interface ToolCall {
  id: string;
  title: string;
  kind: ToolKind;
  status: ToolStatus;
  content: ToolContent[];
  locations: Array<{ path: string; line?: number }>;
  raw_input?: unknown;
  raw_output?: unknown;
  name?: string;
  announced: boolean;
  status_history: Array<{ status: ToolStatus; t: number }>;
  permissions?: unknown[];
  turn: number;
  /** Rules this call broke (`ran_unasked`, …; see `docs/events.md`). */
  anomalies?: string[];
  /** The subagent (child session id) that made it; absent: the session itself. */
  subagent?: string;
}

/** What Trellis derives from a call. */
export interface Facts {
  title: string;
  command: string | null;
  paths: string[];
  duration: number | null;
  exit_code: number | null;
  /** Lines its diffs add and remove (null for a call with no diff). */
  added: number | null;
  removed: number | null;
}

/** An event (docs/events.md): `type` says which; its fields follow. */
export interface Event {
  schema: 1;
  t: number;
  session?: string;
  /** The session's name in the hub that holds it (`HUB:KEY`, as `trellis ls` prints it). */
  hub_session?: string;
  type: string;
  call?: ToolCall;
  status?: ToolStatus;
  previous_status?: ToolStatus | null;
  acp?: string;
  [field: string]: unknown;
}

export interface PermissionOption {
  optionId: string;
  name: string;
  kind: "allow_once" | "allow_always" | "reject_once" | "reject_always";
}

export interface Offer {
  request_id: string;
  session: string | null;
  call: ToolCall;
  facts: Facts;
  options: PermissionOption[];
  deadline_ms: number;
  acp?: string;
}

/** A question of the agent's (`elicitation/create`), as `elicitation_requested` gives it. */
export interface Question {
  request_id: string;
  call_id?: string;
  subagent?: string;
  message: string;
  mode: "form" | "url";
  title?: string;
  description?: string;
  fields?: Array<{ name: string; title?: string; description?: string; required: boolean; type: string; default?: unknown; [k: string]: unknown }>;
  elicitation_id?: string;
  url?: string;
}

export interface QuestionOffer {
  session: string | null;
  question: Question;
  deadline_ms: number;
  acp?: string;
}

export interface CardLines {
  call: Line[];
  result?: Line[];
  /** Draw `call` as the whole line: no status mark or duration of Trellis's own. */
  bare?: boolean;
}

export interface Rewrite {
  pattern: string;
  replace: string;
}

export interface SettingsRow {
  page: string;
  id: string;
  label: string;
  choices: Array<[string, string]>;
  current: string;
}

export type SectionPatch =
  | { op: "splice"; start: number; delete?: number; insert?: Array<Line | Row> }
  | { op: "count"; count: number | null };

export type ToolMatch = { kind: ToolKind } | { name: string };

type Awaitable<T> = T | Promise<T>;

export class HostError extends Error {
  code: number;
  data: unknown;
}

/** A registration used wrongly (an event type that is not one, a handler that is not a
 * function…): thrown when the plugin starts, its message one line that starts at your line
 * (`plugin.mjs:7: …`) and names the name meant. */
export class PluginDefinitionError extends Error {}

/** The event types of `docs/events.md`. */
export const EVENT_TYPES: readonly string[];

export function log(...parts: unknown[]): void;
export function textOf(call: ToolCall): string;

export class Host {
  call(method: string, params?: Record<string, unknown>): Promise<unknown>;
  session(): Promise<Record<string, unknown>>;
  calls(): Promise<ToolCall[]>;
  getCall(callId: string): Promise<ToolCall | null>;
  callState(callId: string): Promise<unknown>;
  putCallState(callId: string, value: unknown, merge?: boolean): Promise<null>;
  resolvePath(path: string): Promise<string>;
  options(): Promise<unknown>;
  report(what: string, message: string): Promise<null>;
  notify(text: string): Promise<null>;
  openInspector(callId: string): Promise<null>;
  repaint(): Promise<null>;
  sectionShown(id: string): Promise<boolean>;
  setSection(id: string, rows: Array<Line | Row>, count?: number | null): Promise<null>;
  patchSection(id: string, patch: SectionPatch[]): Promise<null>;
  setStatusItem(id: string, line: Line | null): Promise<null>;
  setSettings(rows: SettingsRow[]): Promise<null>;
  setTransform(id: string, rewrites: Rewrite[]): Promise<null>;
  /** Answers a request this plugin claimed; `reason` (why, in your words) goes on the
   *  record, the call's card and the inspector. */
  respondPermission(requestId: string, optionId: string, reason?: string): Promise<null>;
  respondQuestion(requestId: string, action: "accept" | "decline" | "cancel", content?: Record<string, unknown>): Promise<null>;
  storeGet(key: string): Promise<unknown>;
  storePut(key: string, value: unknown): Promise<null>;
  prompt(text: string): Promise<null>;
  cancelTurn(): Promise<null>;
  setMode(mode: string): Promise<null>;
  /** Sets one of the agent's config options (a choice's value, or a boolean). Needs `drive`. */
  setConfigOption(id: string, value: string | boolean): Promise<null>;
}

export interface PluginOptions {
  /** Event types wanted (null: all). */
  subscriptions?: string[] | null;
  /** Tool-call events only for these kinds (null: all). */
  callKinds?: ToolKind[] | null;
  /** Receive the verbatim ACP line with each event (`event.acp`). */
  acpPayloads?: boolean;
}

export class Plugin {
  constructor(options?: PluginOptions);
  /** The plugin's name, grants and options, known once Trellis has initialized it. */
  name: string;
  granted: string[];
  options: unknown;
  host: Host | null;
  on(types: string | string[] | null, fn: (event: Event, host: Host) => Awaitable<void>): this;
  onStart(fn: (host: Host) => Awaitable<void>): this;
  onIdle(fn: (host: Host) => Awaitable<void>): this;
  onVisibility(fn: (section: string, shown: boolean, host: Host) => Awaitable<void>): this;
  onPermission(fn: (offer: Offer, host: Host) => Awaitable<boolean>): this;
  onQuestion(fn: (offer: QuestionOffer, host: Host) => Awaitable<boolean>): this;
  section(
    id: string,
    title: string,
    opts?: { maxRows?: number; collapsed?: boolean },
    onClick?: ((row: string, host: Host) => Awaitable<void>) | null,
  ): this;
  design(
    id: string,
    label: string,
    appliesTo: ToolMatch,
    fn: (call: ToolCall, facts: Facts, width: number, host: Host) => Awaitable<CardLines>,
  ): this;
  transform(id: string, label: string, fn: (call: ToolCall, text: string, host: Host) => Awaitable<string | null>): this;
  rewrite(id: string, label: string, rewrites: Rewrite[]): this;
  statusItem(id: string, label: string): this;
  command(name: string, description: string, fn: (args: string, host: Host) => Awaitable<void>): this;
  key(id: string, keys: string, label: string, fn: (host: Host) => Awaitable<void>): this;
  setting(row: string, fn: (choice: string, host: Host) => Awaitable<void>): this;
  /** Serves Trellis (stdin, stdout by default) until it closes the connection. */
  run(input?: unknown, output?: { write(text: string): unknown }): Promise<void>;
}
