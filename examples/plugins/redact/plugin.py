# The built-in `redact` extension, as a plugin (the parity proof: its frames equal the
# built-in's). A declarative transform: Trellis runs the rewrites itself at frame time,
# so redaction costs no round trip. A Settings row turns it off (remembered).
from trellis_plugin import Plugin

MASK = "‹redacted›"
PATTERNS = [
    r"(?s)-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?-----END [A-Z0-9 ]*PRIVATE KEY-----",
    r"(?i)(bearer\s+)[A-Za-z0-9\-._~+/]{16,}=*",
    r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_\-]{20,}",
    r"\bgh[pousr]_[A-Za-z0-9]{36,}",
    r"\bgithub_pat_[A-Za-z0-9_]{40,}",
    r"\bAKIA[0-9A-Z]{16}\b",
    r"\bAIza[0-9A-Za-z_\-]{35}",
    r"\bxox[baprs]-[A-Za-z0-9\-]{10,}",
    r"\bglpat-[A-Za-z0-9_\-]{20,}",
    r"""(?i)((?:api[_-]?key|secret|token|passw(?:or)?d)["']?\s*[:=]\s*["']?)[^\s"']{8,}""",
]

plugin = Plugin(subscriptions=[])
state = {"on": True}


def rewrites():
    patterns = PATTERNS + list((plugin.options or {}).get("patterns", []))
    return [{"pattern": p, "replace": "${1}" + MASK} for p in patterns] if state["on"] else []


def settings(host):
    host.set_settings([{"page": "Redaction", "id": "enabled", "label": "Hide secrets",
                        "choices": [["on", "on"], ["off", "off"]],
                        "current": "on" if state["on"] else "off"}])


plugin.rewrite("secrets", "Redact secrets", [{"pattern": p, "replace": "${1}" + MASK} for p in PATTERNS])


@plugin.on_start
def start(host):
    stored = host.store_get("enabled")
    state["on"] = stored if isinstance(stored, bool) else True
    host.set_transform("secrets", rewrites())
    settings(host)


@plugin.setting("enabled")
def toggle(choice, host):
    state["on"] = choice == "on"
    host.store_put("enabled", state["on"])
    host.set_transform("secrets", rewrites())
    settings(host)


plugin.run()
