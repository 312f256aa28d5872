# Claims permission requests for shell commands on an allowlist of glob patterns and
# allows them once; passes every other request on (to the next extension, then you).
#
# [extensions.permission-helper.options]
# allow = ["cargo test*", "cargo check*", "git status", "ls*"]
import fnmatch
import shlex

from trellis_plugin import Plugin, log

plugin = Plugin(subscriptions=[])
DEFAULT = ["cargo test*", "cargo check*", "git status", "git diff*", "ls*"]
CHAINING = ("&&", "||", ";", "|", "`", "$(", ">", "<")


def allowed(command):
    """The allowlist pattern `command` matches, or None."""
    patterns = (plugin.options or {}).get("allow", DEFAULT)
    if any(op in command for op in CHAINING):
        return None  # `cargo test && rm -rf ~` is not `cargo test`
    try:
        words = " ".join(shlex.split(command))
    except ValueError:
        return None
    return next((p for p in patterns if fnmatch.fnmatchcase(words, p)), None)


@plugin.on_permission
def decide(offer, host):
    command = offer["facts"]["command"]
    pattern = allowed(command) if offer["call"].get("kind") == "execute" and command else None
    if pattern is None:
        return False
    option = next((o for o in offer["options"] if o["kind"] == "allow_once"), None)
    if option is None:
        return False
    log(f"allowing {command!r}")
    host.respond_permission(offer["request_id"], option["optionId"], f"on the allowlist: {pattern}")
    return True


plugin.run()
