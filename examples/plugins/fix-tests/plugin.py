# When a turn ends and the last test run in it failed, sends "the tests fail, fix them"
# (at most `rounds` times in a row, 2 by default). Needs `drive`: Trellis records each
# prompt as coming from this plugin.
from trellis_plugin import Plugin

plugin = Plugin(subscriptions=["tool_call_updated", "turn_ended"], call_kinds=["execute"])
state = {"failing": False, "rounds": 0}
TEST_WORDS = ("test", "pytest", "jest", "vitest", "rspec")


@plugin.on("tool_call_updated")
def updated(event, host):
    call = event["call"]
    command = (call.get("raw_input") or {}).get("command", "") if isinstance(call.get("raw_input"), dict) else ""
    if not any(w in (command or call.get("title", "")).lower() for w in TEST_WORDS):
        return
    if call["status"] == "failed":
        state["failing"] = True
    elif call["status"] == "completed":
        state["failing"] = False


@plugin.on("turn_ended")
def ended(event, host):
    limit = (plugin.options or {}).get("rounds", 2)
    if state["failing"] and state["rounds"] < limit and event.get("stop_reason") == "end_turn":
        state["rounds"] += 1
        state["failing"] = False
        host.prompt("the tests fail, fix them")
    else:
        state["rounds"] = 0


plugin.run()
