// A Trellis plugin: a card design for shell commands and a sidebar section of failures.
// Edit this file, then build it: `npm run build` (writes plugin.mjs).
import { Plugin } from "./lib/trellis-plugin.mjs";
const plugin = new Plugin({ subscriptions: ["tool_call_updated"], callKinds: ["execute"] });
const failed = new Map();
plugin.design("shell", "Shell", { kind: "execute" }, (call, facts) => {
    const code = facts.exit_code;
    const took = facts.duration !== null ? `  ${facts.duration.toFixed(1)}s` : "";
    return {
        call: [[
                { text: "$ ", tone: "accent" },
                facts.command ?? facts.title,
                { text: code !== null ? `  exit ${code}` : "", tone: code === 0 ? "good" : "bad" },
                took,
            ]],
    };
});
plugin.section("failed", "Failed commands", {}, async (callId, host) => {
    await host.openInspector(callId);
});
plugin.on("tool_call_updated", async (event, host) => {
    const call = event.call;
    if (call?.status === "failed") {
        failed.set(call.id, call.title);
        await host.setSection("failed", [...failed].map(([id, title]) => ({ line: title, id })), failed.size);
    }
});
plugin.run();
