# For the round-trip benchmark: answers every event with a host call (notify).
from trellis_plugin import Plugin

plugin = Plugin(subscriptions=["message_chunk"])


@plugin.on("message_chunk")
def echo(event, host):
    host.notify(event["text"])


plugin.run()
