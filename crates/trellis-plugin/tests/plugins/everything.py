"""A test plugin that uses every part of the SDK (driven by crates/trellis-plugin/tests/python/)."""
from trellis_plugin import Plugin, HostError, log, text_of

plugin = Plugin()
seen = []
dirty = True

plugin.status_item("n", "Seen calls")
plugin.rewrite("ids", "Hide ids", [{"pattern": r"id-\d+", "replace": "id-*"}])


@plugin.section("calls", "Seen calls", max_rows=5)
def clicked(row, host):
    host.open_inspector(row)


@plugin.on("tool_call_created")
def created(event, host):
    global dirty
    seen.append(event["call"]["id"])
    dirty = True
    host.put_call_state(event["call"]["id"], {"seen": len(seen)}, merge=True)


@plugin.on("turn_ended")
def ended(event, host):
    try:
        host.prompt("again")
    except HostError as e:
        log(f"drive refused: {e.code} {e.message}")
        host.report("drive", f"refused with {e.code}")


@plugin.on_idle
def idle(host):
    global dirty
    if dirty and host.section_shown("calls"):
        host.set_section("calls", [{"line": [{"text": c, "tone": "accent"}], "id": c} for c in seen], count=len(seen))
        dirty = False
    host.set_status_item("n", f"{len(seen)} seen")


@plugin.design("shell", label="Shell", kind="execute")
def shell(call, facts, width, host):
    code = facts["exit_code"]
    mark = "✓" if call["status"] == "completed" else "✗"
    return {"call": [[mark + " ", {"text": "$ " + (facts["command"] or "?"), "bold": True}, f"  exit {code}"]],
            "result": [text_of(call).strip()]}


@plugin.transform("upper", label="Shout")
def upper(call, text, host):
    return text.upper() if "shout" in text else None


@plugin.on_permission
def permission(offer, host):
    cmd = offer["facts"]["command"] or ""
    if not cmd.startswith("ls"):
        return False
    allow = next(o for o in offer["options"] if o["kind"].startswith("allow"))
    host.respond_permission(offer["request_id"], allow["optionId"])
    return True


@plugin.command("hello", "Say hello")
def hello(args, host):
    host.notify(f"hello {args} from {plugin.name}, options {plugin.options}")
    host.store_put("greeted", {"args": args})
    assert host.store_get("greeted") == {"args": args}


plugin.run()
