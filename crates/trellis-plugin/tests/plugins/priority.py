"""Says on stderr the CPU priority it started with (driven by crates/trellis-plugin/tests/python/)."""
import os
import sys
import threading

print(
    f"started with policy {os.sched_getscheduler(0)} nice {os.getpriority(os.PRIO_PROCESS, 0)}",
    file=sys.stderr,
    flush=True,
)
# A second thread from the start: the lowering covers every thread, not the main one only.
threading.Thread(target=lambda: threading.Event().wait(), daemon=True).start()

from trellis_plugin import Plugin  # noqa: E402

plugin = Plugin(subscriptions=[])
plugin.run()
