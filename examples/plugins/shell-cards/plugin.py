# A card design for shell commands: `$ command`, its exit code and how long it took.
from trellis_plugin import Plugin, text_of

plugin = Plugin(subscriptions=[])


@plugin.design("shell", label="Shell", kind="execute")
def shell(call, facts, width, host):
    code, took = facts["exit_code"], facts["duration"]
    if code is None and call["status"] in ("completed", "failed"):
        code = 0 if call["status"] == "completed" else 1
    head = [{"text": "$ ", "tone": "accent"}, {"text": facts["command"] or facts["title"], "bold": True}]
    if code is not None:
        head.append({"text": f"  exit {code}", "tone": "good" if code == 0 else "bad"})
    if took is not None:
        head.append({"text": f"  {took:.1f}s", "tone": "dim"})
    last = [line for line in text_of(call).splitlines() if line.strip()][-2:]
    return {"call": [head], "result": [{"text": line, "tone": "dim"} for line in last]}


plugin.run()
