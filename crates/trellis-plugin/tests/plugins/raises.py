"""A plugin on the SDK whose event handler raises on every tool call."""
from trellis_plugin import Plugin

plugin = Plugin()


@plugin.on("tool_call_created")
def on_call(event, host):
    return event["no such key"]


plugin.run()
