// A sidebar section with live test results, parsed from the output of the agent's test
// runs (cargo test, pytest, jest/vitest), and a status item with the totals. Rows of
// failing tests open the inspector on the run that reported them.
import { Plugin, textOf, type Host, type Line, type Row, type ToolCall } from "./lib/trellis-plugin.mjs";

interface Run {
  callId: string;
  tool: string;
  passed: number;
  failed: number;
  failures: string[];
  running: boolean;
}

const plugin = new Plugin({ subscriptions: ["tool_call_created", "tool_call_updated"], callKinds: ["execute"] });
const runs = new Map<string, Run>();
let dirty = true;

/** Which test tool a command line runs, if any. */
function toolOf(command: string): string | null {
  if (/\bcargo\s+(nextest\s+run|test)\b/.test(command)) return "cargo";
  if (/\b(pytest|py\.test)\b|python3? -m pytest/.test(command)) return "pytest";
  if (/\b(jest|vitest)\b|\bnpm (run )?test\b|\bnpx (jest|vitest)\b/.test(command)) return "jest";
  return null;
}

/** Counts and failing tests from a tool's output (what has been printed so far). */
export function parse(tool: string, out: string): { passed: number; failed: number; failures: string[] } {
  let passed = 0;
  let failed = 0;
  const failures: string[] = [];
  const num = (re: RegExp, s: string) => Number(re.exec(s)?.[1] ?? 0);
  for (const line of out.split("\n")) {
    if (tool === "cargo") {
      const m = /^test result: \w+\. (\d+) passed; (\d+) failed/.exec(line);
      if (m) {
        passed += Number(m[1]);
        failed += Number(m[2]);
      }
      const f = /^test (\S+) \.\.\. FAILED/.exec(line);
      if (f) failures.push(f[1]);
    } else if (tool === "pytest") {
      if (/^=+ .*(passed|failed).* in [\d.]+s/.test(line)) {
        passed = num(/(\d+) passed/, line);
        failed = num(/(\d+) failed/, line);
      }
      const f = /^FAILED (\S+)/.exec(line);
      if (f) failures.push(f[1]);
    } else {
      if (/^Tests:\s/.test(line)) {
        passed = num(/(\d+) passed/, line);
        failed = num(/(\d+) failed/, line);
      }
      const f = /^\s*[✕×] (.+?)(?: \(\d+ ?ms\))?$/.exec(line);
      if (f) failures.push(f[1]);
    }
  }
  return { passed, failed, failures };
}

function commandOf(call: ToolCall): string {
  const input = call.raw_input as { command?: unknown } | undefined;
  const c = input?.command;
  return typeof c === "string" ? c : Array.isArray(c) ? c.join(" ") : call.title;
}

function seen(call: ToolCall): void {
  const tool = toolOf(commandOf(call));
  if (!tool) return;
  const r = parse(tool, textOf(call));
  runs.set(call.id, { callId: call.id, tool, ...r, running: call.status === "pending" || call.status === "in_progress" });
  dirty = true;
}

plugin.on(["tool_call_created", "tool_call_updated"], (event) => {
  if (event.call) seen(event.call);
});

plugin.section("results", "Test results", { maxRows: 12 }, async (row: string, host: Host) => {
  await host.openInspector(row);
});
plugin.statusItem("totals", "Test totals");
// Shown again after being collapsed or hidden: push it again.
plugin.onVisibility((_section, shown) => {
  if (shown) dirty = true;
});

plugin.onIdle(async (host) => {
  if (!dirty) return;
  dirty = false;
  // The latest run of each tool, in the order the tools first ran.
  const latest = new Map<string, Run>();
  for (const r of runs.values()) latest.set(r.tool, r);
  if (latest.size === 0) return;
  const rows: Array<Line | Row> = [];
  let passed = 0;
  let failed = 0;
  let running = false;
  for (const r of latest.values()) {
    passed += r.passed;
    failed += r.failed;
    running ||= r.running;
    const state: Line = r.running
      ? [{ text: "… running", tone: "accent" }]
      : r.failed > 0
        ? [{ text: `✗ ${r.failed} failed`, tone: "bad" }, { text: `  ✓ ${r.passed}`, tone: "good" }]
        : [{ text: `✓ ${r.passed} passed`, tone: "good" }];
    rows.push({ line: [{ text: `${r.tool} `, bold: true }, ...state], id: r.callId });
    for (const f of r.failures) rows.push({ line: [{ text: "  ✗ ", tone: "bad" }, f], id: r.callId });
  }
  if (await host.sectionShown("results")) await host.setSection("results", rows, failed);
  const totals: Line = running
    ? "tests …"
    : [`tests ${passed}✓`, ...(failed ? [{ text: ` ${failed}✗`, tone: "bad" as const }] : [])];
  await host.setStatusItem("totals", totals);
});

plugin.run();
