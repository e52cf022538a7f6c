"""A raw WebSocket client (the standard library's socket, frames made by hand) for what no polite client
does to the aria2 face. Run by Tests/EndToEndTests/RPCTests.swift; prints one JSON object.

    python rawsocket.py badutf8 --port P
        A text frame that is not UTF-8: what the service answers (RFC 6455: close with 1007).
    python rawsocket.py flood --port P --secret S --pid PID --calls N --pad BYTES
        N `tellWaiting` calls (each padded with BYTES of blanks) sent without reading a reply: whether the
        service stopped taking them (the socket stays unwritable), its VmRSS before, during and after, and
        whether it answered another client meanwhile.
"""

import argparse
import base64
import json
import os
import re
import select
import socket
import struct
import sys
import urllib.request


def connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall((f"GET /jsonrpc HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                  f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(1)
        if not chunk:
            sys.exit("rawsocket: the upgrade was not answered")
        head += chunk
    if not head.startswith(b"HTTP/1.1 101"):
        sys.exit(f"rawsocket: the upgrade was answered {head.splitlines()[0]!r}")
    return sock


def frame(opcode: int, payload: bytes) -> bytes:
    """One final frame, masked as a client's must be."""
    mask = os.urandom(4)
    length = len(payload)
    if length < 126:
        head = struct.pack("!BB", 0x80 | opcode, 0x80 | length)
    elif length < 1 << 16:
        head = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, length)
    else:
        head = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, length)
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def read_exactly(sock: socket.socket, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def read_frame(sock: socket.socket) -> tuple:
    first, second = read_exactly(sock, 2)
    length = second & 0x7F
    if length == 126:
        length = struct.unpack("!H", read_exactly(sock, 2))[0]
    elif length == 127:
        length = struct.unpack("!Q", read_exactly(sock, 8))[0]
    return first & 0x0F, read_exactly(sock, length)


def bad_utf8(args) -> dict:
    sock = connect(args.port)
    # A call whose string holds bytes that are no UTF-8 (a lone continuation byte, an overlong form).
    sock.sendall(frame(0x1, b'{"jsonrpc":"2.0","id":1,"method":"system.listMethods","x":"\x80\xc0\xaf"}'))
    sock.settimeout(10)
    seen: dict = {"texts": 0, "close": None}
    try:
        while True:
            opcode, payload = read_frame(sock)
            if opcode == 0x8:
                seen["close"] = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else 1005
                break
            if opcode == 0x1:
                seen["texts"] += 1
    except (EOFError, socket.timeout, ConnectionResetError) as error:
        seen["ended"] = type(error).__name__
    sock.close()
    return seen


def rss(pid: int) -> int:
    """The process's resident memory, in KiB."""
    with open(f"/proc/{pid}/status") as status:
        return int(re.search(r"VmRSS:\s+(\d+) kB", status.read()).group(1))


def answers(port: int, secret: str) -> bool:
    body = json.dumps({"jsonrpc": "2.0", "id": "other", "method": "aria2.getVersion",
                       "params": ["token:" + secret]}).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/jsonrpc", data=body)
    with urllib.request.urlopen(request, timeout=30) as reply:
        return json.load(reply).get("result", {}).get("version") is not None


def flood(args) -> dict:
    seen: dict = {"before": rss(args.pid), "calls": args.calls}
    sock = connect(args.port)
    sock.setblocking(False)
    sent, pending, peak = 0, b"", seen["before"]
    throttled = False
    while sent < args.calls or pending:
        if not pending:
            call = json.dumps({"jsonrpc": "2.0", "id": sent, "method": "aria2.tellWaiting",
                               "params": ["token:" + args.secret, 0, 1000]}) + " " * args.pad
            pending = frame(0x1, call.encode())
            sent += 1
        # The service takes no more calls: the socket stays full for as long as `--stall` seconds.
        _, writable, _ = select.select([], [sock], [], args.stall)
        if not writable:
            throttled = True
            break
        pending = pending[sock.send(pending):]
        if sent % 100 == 0:
            peak = max(peak, rss(args.pid))
    seen["sent"] = sent
    seen["throttled"] = throttled
    seen["during"] = max(peak, rss(args.pid))
    seen["otherAnswered"] = answers(args.port, args.secret)
    # The client goes without having read a reply.
    sock.close()
    seen["otherAnsweredAfter"] = answers(args.port, args.secret)
    seen["after"] = rss(args.pid)
    return seen


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["badutf8", "flood"])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--secret", default="")
    parser.add_argument("--pid", type=int, default=0)
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--pad", type=int, default=4096)
    parser.add_argument("--stall", type=float, default=5)
    args = parser.parse_args()
    print(json.dumps(bad_utf8(args) if args.mode == "badutf8" else flood(args)))


if __name__ == "__main__":
    main()
