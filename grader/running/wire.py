"""ZeroMQ's wire protocol (ZMTP 3.0) to a kernel's unix sockets, spoken by the grader itself (for
``grader/running/kernel.py``).

The grader holds no ZeroMQ socket of its own: libzmq bounds each frame of a message (``MAXMSGSIZE``) but neither
its count of frames nor its whole size, and it holds a whole message before handing over its first frame, so one
message of many large frames (views of one buffer, which cost the kernel nothing) would take all the grader's
memory. A :class:`Wire` reads frame by frame and stops, unread, at the first frame that would take a message past
its bounds (``MAX_FRAMES``, ``MAX_MESSAGE_BYTES`` in ``grader/limits.py``), raising :class:`Refused`.

Why the protocol rather than a ZeroMQ client in a process of its own under a memory limit: ZMTP 3.0 is a published,
versioned spec (RFC 23, rfc.zeromq.org/spec/23), and libzmq answers a peer that greets it as 3.0 in 3.0 (it keeps a
handshake for every older version): what the grader relies on is a promise libzmq makes to every peer, not a detail
of one release. A bound in bytes per message, checked at each frame's header, is exact, where a memory limit bounds
only a whole process (libzmq aborts when an allocation fails), and that process would cost another Python and
jupyter_client's import at every kernel start. Beyond RFC 23 the wire relies on two things libzmq does: it takes a
subscription as a message (3.0's form) from a 3.0 peer, and it sends no command after the handshake unless a socket
sets heartbeats (``ZMQ_HEARTBEAT_IVL``), which a kernel's do not. ``tests/test_wire.py`` checks all of it against
the pinned pyzmq's own sockets.
"""

from __future__ import annotations

import queue
import socket
import time

from grader import limits


class Refused(Exception):
    """The kernel sent a message past MAX_FRAMES or MAX_MESSAGE_BYTES, or broke the protocol: the wire is not read
    any further."""


GREETING = b"\xff" + bytes(8) + b"\x7f" + b"\x03\x00" + b"NULL".ljust(20, b"\0") + b"\0" + bytes(31)  # ZMTP 3.0
MORE, LONG, COMMAND = 1, 2, 4  # a frame's flags


class Wire:
    """One connection to a socket of the kernel, in ZeroMQ's protocol (ZMTP 3.0, no security, as the ipc
    transport has it), read by the grader frame by frame: what it holds is bounded by the message it is reading.

    ``kind`` is this end's ZeroMQ socket type (``b"SUB"``, ``b"DEALER"``). :meth:`recv` keeps a message it has
    begun across calls, and raises :class:`Refused` at the header of a frame that would take the message past
    ``MAX_FRAMES`` or ``MAX_MESSAGE_BYTES`` (``grader.limits``), before its body is read.
    """

    def __init__(self, path: str, kind: bytes, deadline: float, alive):
        self.buf = bytearray()              # read, not yet taken: at most one frame and READ_BYTES
        self.frames: list[bytes] = []       # the message begun
        self.size = 0                       # its bytes
        self.sock = _connect(path, deadline, alive)
        try:
            self._send(GREETING)
            while len(self.buf) < len(GREETING):
                self._read(deadline)
            peer = bytes(self.buf[:len(GREETING)])
            del self.buf[:len(GREETING)]
            if peer[0] != 0xFF or peer[9] & 1 != 1 or peer[10] < 3 or peer[12:32].rstrip(b"\0") != b"NULL":
                raise Refused("not a ZMTP 3 peer without security")
            ready = b"\x05READY" + bytes([11]) + b"Socket-Type" + len(kind).to_bytes(4, "big") + kind
            self._send(_frame(ready, COMMAND))
            flags, body = self._frame(deadline)
            if not flags & COMMAND or not body.startswith(b"\x05READY"):
                raise Refused("no READY")
        except BaseException:
            self.close()
            raise

    def send(self, frames: list[bytes]) -> None:
        """One message; OSError if the kernel does not take it within SEND_S."""
        self._send(b"".join(_frame(f, MORE if i < len(frames) - 1 else 0) for i, f in enumerate(frames)))

    def recv(self, timeout: float) -> list[bytes]:
        """The next whole message, its frames; queue.Empty if it did not come within ``timeout`` (what came of it is
        kept), EOFError once the kernel closed the connection."""
        deadline = time.monotonic() + timeout
        while True:
            flags, body = self._frame(deadline)
            if flags & COMMAND:  # none after the handshake in ZMTP 3.0
                raise Refused("a command")
            self.frames.append(body)
            self.size += len(body)
            if not flags & MORE:
                frames, self.frames, self.size = self.frames, [], 0
                return frames

    def close(self) -> None:
        self.sock.close()
        self.buf, self.frames = bytearray(), []

    def _frame(self, deadline: float) -> tuple[int, bytes]:
        """The next frame (its flags and body), checked against the message's bounds as soon as its header is in."""
        while True:
            if len(self.buf) >= 2:
                flags = self.buf[0]
                head = 9 if flags & LONG else 2
                if len(self.buf) >= head:
                    n = int.from_bytes(self.buf[1:head], "big")
                    if flags & ~(MORE | LONG | COMMAND) or len(self.frames) >= limits.MAX_FRAMES \
                            or self.size + n > limits.MAX_MESSAGE_BYTES:
                        raise Refused("past the bounds")
                    if len(self.buf) >= head + n:
                        with memoryview(self.buf) as view:
                            body = bytes(view[head:head + n])
                        del self.buf[:head + n]
                        return flags, body
            self._read(deadline)

    def _read(self, deadline: float) -> None:
        left = deadline - time.monotonic()
        if left <= 0:
            raise queue.Empty
        self.sock.settimeout(left)
        try:
            data = self.sock.recv(limits.READ_BYTES)
        except TimeoutError:
            raise queue.Empty from None
        except OSError as e:
            raise EOFError("the connection broke") from e
        if not data:
            raise EOFError("the kernel closed the connection")
        self.buf += data

    def _send(self, data: bytes) -> None:
        self.sock.settimeout(limits.SEND_S)
        self.sock.sendall(data)


def _frame(body: bytes, flags: int) -> bytes:
    if len(body) > 255:
        return bytes([flags | LONG]) + len(body).to_bytes(8, "big") + body
    return bytes([flags, len(body)]) + body


def _connect(path: str, deadline: float, alive) -> socket.socket:
    """A unix socket connected to ``path`` once the kernel made it; OSError past ``deadline`` or once it died."""
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(limits.SEND_S)
        try:
            sock.connect(path)
            return sock
        except (FileNotFoundError, ConnectionRefusedError):
            sock.close()
            if time.monotonic() >= deadline or not alive():
                raise
            time.sleep(0.02)
