// A plugin on the TypeScript SDK that calls a host function it was not granted (ui).
import { Plugin } from "../../../../sdk/typescript/trellis-plugin.mjs";

const plugin = new Plugin();
plugin.on("tool_call_created", async function onCall(event, host) {
  await host.notify("a call");
});
plugin.run();
