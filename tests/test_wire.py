"""The grader's ZeroMQ wire (``grader/running/wire.py``) against the pinned pyzmq's own sockets, in this process.

A kernel binds an XPUB socket for IOPub and ROUTER sockets for shell and control (ipykernel's kernelapp), over ipc;
the grader connects to them as SUB and DEALER with :class:`~grader.running.wire.Wire`, which speaks ZMTP 3.0 (RFC 23,
rfc.zeromq.org/spec/23) frame by frame. Each test binds pyzmq's socket of the kernel's type and checks one thing
the grader relies on: the greeting and READY, the subscription, a multi-frame message each way, a frame of more
than 255 bytes (the LONG flag), Jupyter's signed messages, and the refusals past ``MAX_FRAMES`` and
``MAX_MESSAGE_BYTES`` before the frame is read. An upgrade of pyzmq (libzmq) or jupyter_client that changes any
of it fails the test that names it.
"""

from __future__ import annotations

import queue
import time

import pytest
import zmq
from jupyter_client.session import Session

from grader import limits
from grader.running.wire import Refused, Wire

WAIT_S = 5


@pytest.fixture
def context():
    ctx = zmq.Context()
    yield ctx
    ctx.destroy(linger=0)


def bound(context, kind: int, folder, options: dict | None = None) -> tuple[zmq.Socket, str]:
    """A pyzmq socket of ``kind`` bound on ipc in ``folder``, as a kernel binds its channels (``options``, pyzmq's
    socket options and their values, set before it binds); the path to connect."""
    sock = context.socket(kind)
    for option, value in (options or {}).items():
        sock.setsockopt(option, value)
    sock.linger = 0
    sock.rcvtimeo = sock.sndtimeo = WAIT_S * 1000
    path = str(folder / f"k-{kind}")
    sock.bind(f"ipc://{path}")
    return sock, path


def connect(path: str, kind: bytes) -> Wire:
    return Wire(path, kind, time.monotonic() + WAIT_S, lambda: True)


@pytest.fixture
def dealer(context, tmp_path):
    """A kernel's channel and our wire to it: a pyzmq ROUTER bound on ipc, our DEALER connected and one message sent
    so that the router knows whom to answer. ``(router, our identity at the router, wire)``; the wire is closed after
    the test (the limits it reads are read at each ``recv``, so a test may patch them after this)."""
    router, path = bound(context, zmq.ROUTER, tmp_path)
    wire = connect(path, b"DEALER")
    try:
        wire.send([b"hello"])
        identity, _ = router.recv_multipart()
        yield router, identity, wire
    finally:
        wire.close()


def test_the_handshake_with_a_router_and_a_dealers_message_each_way(context, tmp_path):
    """Greeting, READY (libzmq answers a 3.0 peer in 3.0), then a message of three frames each way: an empty frame,
    a short one and one of 300 bytes, which ZMTP sends with the LONG flag and an 8-byte size."""
    router, path = bound(context, zmq.ROUTER, tmp_path)
    wire = connect(path, b"DEALER")
    try:
        frames = [b"", b"short", bytes(range(256)) + b"x" * 44]
        wire.send(frames)
        identity, *got = router.recv_multipart()
        assert got == frames
        router.send_multipart([identity, *frames[::-1]])
        assert wire.recv(WAIT_S) == frames[::-1]
    finally:
        wire.close()


def test_a_subscription_reaches_the_kernels_xpub_and_its_messages_come_back(context, tmp_path):
    """ipykernel's IOPub is an XPUB socket: it sees the grader's subscription (a message ``\\x01`` in ZMTP 3.0, which
    libzmq still takes from a 3.0 peer) and then publishes to it."""
    xpub, path = bound(context, zmq.XPUB, tmp_path)
    wire = connect(path, b"SUB")
    try:
        wire.send([b"\x01"])
        assert xpub.recv() == b"\x01"
        message = [b"kernel.1234.status", b"<IDS|MSG>", b"x" * 1000]
        xpub.send_multipart(message)
        assert wire.recv(WAIT_S) == message
    finally:
        wire.close()


def test_jupyters_signed_messages_cross_the_wire_both_ways(context, tmp_path):
    """What ``grader/running/kernel.py`` does with jupyter_client's public ``Session``: it serializes a request onto the
    wire, and reads a message the kernel's session sent with ``feed_identities`` and ``deserialize``."""
    session = Session(key=b"secret", signature_scheme="hmac-sha256")
    router, path = bound(context, zmq.ROUTER, tmp_path)
    wire = connect(path, b"DEALER")
    try:
        request = session.msg("execute_request", {"code": "1 + 1"})
        wire.send(session.serialize(request))
        identity, *frames = router.recv_multipart()
        _, parts = session.feed_identities(frames)
        assert session.deserialize(parts)["content"] == {"code": "1 + 1"}
        session.send(router, "status", {"execution_state": "idle"}, parent=request, ident=identity)
        _, parts = session.feed_identities(wire.recv(WAIT_S))
        reply = session.deserialize(parts)
        assert reply["parent_header"]["msg_id"] == request["header"]["msg_id"]
        assert reply["content"] == {"execution_state": "idle"}
    finally:
        wire.close()


def test_a_message_of_more_than_max_frames_is_refused(dealer, monkeypatch):
    router, identity, wire = dealer
    monkeypatch.setattr(limits, "MAX_FRAMES", 4)
    router.send_multipart([identity, b"1", b"2", b"3", b"4"])
    assert wire.recv(WAIT_S) == [b"1", b"2", b"3", b"4"]  # four frames: within the bound
    router.send_multipart([identity, b"1", b"2", b"3", b"4", b"5"])
    with pytest.raises(Refused):
        wire.recv(WAIT_S)


def test_a_message_past_max_message_bytes_is_refused_before_its_frame_is_read(dealer, monkeypatch):
    """The refusal comes at the header of the frame that would pass the bound: of an 8 MiB frame the wire has read
    at most one read's worth (``READ_BYTES``), never the frame."""
    router, identity, wire = dealer
    monkeypatch.setattr(limits, "MAX_MESSAGE_BYTES", 1000)
    router.send_multipart([identity, b"a" * 600, b"b" * 400])
    assert [len(f) for f in wire.recv(WAIT_S)] == [600, 400]  # 1000 bytes: within the bound
    router.send_multipart([identity, b"a" * 600, bytes(8 * 2**20)])
    with pytest.raises(Refused):
        wire.recv(WAIT_S)
    assert wire.size == 600 and len(wire.buf) <= limits.READ_BYTES


def test_no_message_in_time_is_empty_and_a_closed_socket_is_the_end(context, tmp_path):
    router, path = bound(context, zmq.ROUTER, tmp_path)
    wire = connect(path, b"DEALER")
    try:
        with pytest.raises(queue.Empty):
            wire.recv(0.2)
        router.close()
        with pytest.raises(EOFError):
            wire.recv(WAIT_S)
    finally:
        wire.close()


def test_a_peer_that_sends_heartbeats_is_refused_and_pyzmq_sends_none_by_default(context, tmp_path):
    """libzmq sends ZMTP 3.1's PING commands, even to a 3.0 peer, once a socket sets ``ZMQ_HEARTBEAT_IVL``; the wire
    refuses any command after the handshake (the grader does not read shell or control, so it could not answer
    them). A kernel's sockets set no heartbeat (its heartbeat is a channel of its own, never connected): pyzmq's
    default is none."""
    assert context.socket(zmq.ROUTER).getsockopt(zmq.HEARTBEAT_IVL) == 0
    _, path = bound(context, zmq.ROUTER, tmp_path, {zmq.HEARTBEAT_IVL: 50})
    wire = connect(path, b"DEALER")
    try:
        with pytest.raises(Refused):
            wire.recv(WAIT_S)
    finally:
        wire.close()


def test_a_peer_that_is_not_zmtp_3_without_security_is_refused(tmp_path):
    """A listener that answers with the greeting of an older version (here ZMTP 2.0's revision, with everything else
    as 3.0 has it) is not a kernel's socket."""
    import socket
    import threading

    path = str(tmp_path / "old")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(1)

    def answer():
        peer, _ = listener.accept()
        peer.sendall(b"\xff" + bytes(8) + b"\x7f" + b"\x01\x00" + b"NULL".ljust(52, b"\0"))  # revision 1: ZMTP 2.0
        peer.recv(64)
        peer.close()

    thread = threading.Thread(target=answer)
    thread.start()
    try:
        with pytest.raises(Refused):
            connect(path, b"DEALER")
    finally:
        thread.join(WAIT_S)
        listener.close()
