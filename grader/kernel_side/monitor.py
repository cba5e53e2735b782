"""A record of what the student's code tried that the sandbox refuses (kernel side).

Installed before the student's first cell as an audit hook. It is for the instructor's report only and
decides nothing: the code it watches can forge or silence it, so the report says "reported by the kernel".
"""

from __future__ import annotations

import os
import signal
import sys
import types


def _interrupts_itself(event: str, args) -> bool:
    """Whether a signal is ipykernel interrupting its own process, as it does when the grader stops a cell (an
    interrupt request, answered with SIGINT to itself): the grader's doing, which the report says in its own words."""
    own = os.getpid() if event == "os.kill" else os.getpgid(0)
    return len(args) == 2 and args[0] == own and args[1] == signal.SIGINT


def install(box: str, read_roots: tuple, repo: str, home: str, max_events: int) -> None:
    """Record writes and reads outside the kernel's folders, network use, processes and signals.

    ``home``: the sandbox's HOME; ``max_events``: how many different things are recorded at most. Both are the
    grader's (``grader.running.sandbox.HOME``, ``grader.limits.MAX_KERNEL_EVENTS``), written into the code that calls
    this.
    """
    # Its own: /tmp, HOME, its answers folder. Not its own, even where they lie under /tmp on the host:
    # the folders the grader binds in (the package, the environment, the box) and the repository.
    mine = ("/tmp/", home, box + "/out", "/dev/null", "/dev/shm")
    not_mine = tuple(read_roots) + (box, repo)
    allowed_read = mine + tuple(read_roots) + ("/usr", "/dev", "/proc/self", "/proc/thread-self", "/etc", "/sys")
    seen = sys.modules.setdefault("__grader_events__", types.SimpleNamespace(events=[])).events
    log = open(box + "/out/events.log", "a", buffering=1)  # written as it happens: a kernel that dies keeps it

    def note(text):
        if text not in seen and len(seen) < max_events:
            seen.append(text)
            try:
                log.write(text.replace("\n", " ") + "\n")
            except (OSError, ValueError):  # a forked child that closed its files: the record stays as it is
                pass

    def look(event, args):
        if event == "open" and isinstance(args[0], str):
            path, mode, flags = args[0], args[1] or "", args[2] or 0
            write = any(c in str(mode) for c in "wax+") or bool(flags & 0o3103)
            outside = path.startswith("/") and (not path.startswith(mine) or path.startswith(not_mine))
            if write and outside and not path.startswith(box + "/out"):
                note("write outside its folders: " + path[:120])
            elif not write and path.startswith("/") and not path.startswith(allowed_read):
                note("read outside its folders: " + path[:120])
        elif event in ("socket.connect", "socket.bind", "socket.sendto"):
            note("network: " + event.split(".")[1] + " " + repr(args[1])[:100])
        elif event == "socket.getaddrinfo":
            note("network: look up " + repr(args[0])[:100])
        elif event in ("subprocess.Popen", "os.system", "os.fork", "os.forkpty", "os.posix_spawn", "os.exec"):
            note("started a process: " + event)
        elif event in ("os.kill", "os.killpg") and not _interrupts_itself(event, args):
            note("sent a signal: " + repr(args)[:80])

    def hook(event, args):
        try:
            look(event, args)
        except Exception:  # the record must never change what the student's code does
            pass

    sys.addaudithook(hook)
