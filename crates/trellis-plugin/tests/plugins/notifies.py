"""A plugin on the SDK that calls a host function it was not granted (ui) on every call."""
from trellis_plugin import Plugin

plugin = Plugin()


@plugin.on("tool_call_created")
def on_call(event, host):
    host.notify("a call")


plugin.run()
