"""A plugin on the SDK that prints, as people debug: at start and in a handler."""
from trellis_plugin import Plugin

plugin = Plugin()
print("starting up")


@plugin.on("tool_call_created")
def on_call(event, host):
    print("saw", event["call"]["id"])


plugin.run()
