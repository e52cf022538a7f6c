#!/usr/bin/env python3
"""A TCP proxy that shapes each connection on its own, as a network or a server does:

- `--rate`: what the server sends reaches the client at no more than RATE bytes per second per TCP
  connection (a token bucket per connection, 10 ms of burst). What the client sends passes unshaped.
- `--delay`: a long path. Every byte, either way, arrives DELAY seconds after it was sent (a round trip
  of twice that), a connection carries bytes only a round trip after it was accepted (the TCP handshake),
  and at most WINDOW bytes a direction are in flight, counted until their acknowledgement would be back a
  round trip later: one connection moves at most WINDOW per round trip, as TCP's window allows.

    bench/shaper.py --listen PORT --to HOST:PORT [--rate BYTES_PER_SECOND] [--delay SECONDS --window BYTES]

It says `listening on 127.0.0.1:PORT` on its first line once it accepts connections, and runs until
SIGTERM. It does not look into the bytes, so TLS and HTTP/2 pass through it: with HTTP/2, every request a
client multiplexes onto one connection shares that connection's rate, which is the point of measuring it.
Only the Python 3 standard library.
"""

import argparse
import asyncio
import signal
import sys
import time


class Bucket:
    """Tokens at `rate` per second, at most `burst`; `take` waits until `n` can be spent."""

    def __init__(self, rate: float, burst: float):
        self.rate = rate
        self.burst = burst
        self.tokens = burst
        self.stamp = time.monotonic()

    async def take(self, n: int) -> None:
        while True:
            now = time.monotonic()
            self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
            self.stamp = now
            if self.tokens >= n:
                self.tokens -= n
                return
            await asyncio.sleep((n - self.tokens) / self.rate)


async def forward(writer: asyncio.StreamWriter, pieces) -> None:
    """Writes each piece of the async iterator `pieces` as it comes, then closes `writer`; either side's
    connection gone ends it."""
    try:
        async for data in pieces:
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        try:
            writer.close()
        except Exception:
            pass


async def shaped(reader: asyncio.StreamReader, bucket: Bucket | None, chunk: int):
    """What `reader` brings, in pieces of at most `chunk` bytes, each once `bucket` allows it."""
    while data := await reader.read(chunk):
        if bucket:
            await bucket.take(len(data))
        yield data


async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, bucket: Bucket | None,
               chunk: int) -> None:
    await forward(writer, shaped(reader, bucket, chunk))


async def delayed_pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, bucket: Bucket | None,
                       chunk: int, delay: float, window: int) -> None:
    """`pump` through a delay line: each piece is written `delay` after it was read, and reading waits while
    `window` bytes are in flight (read less than two delays ago)."""
    loop = asyncio.get_running_loop()
    line: asyncio.Queue = asyncio.Queue()
    in_flight = 0
    room = asyncio.Event()
    room.set()

    def acknowledged(n: int) -> None:
        nonlocal in_flight
        in_flight -= n
        room.set()

    async def due():
        while (item := await line.get()) is not None:
            arrival, data = item
            if (wait := arrival - loop.time()) > 0:
                await asyncio.sleep(wait)
            yield data

    delivering = asyncio.ensure_future(forward(writer, due()))
    try:
        while True:
            while in_flight >= window:
                room.clear()
                await room.wait()
            data = await reader.read(min(chunk, window - in_flight))
            if not data:
                break
            if bucket:
                await bucket.take(len(data))
            in_flight += len(data)
            loop.call_later(2 * delay, acknowledged, len(data))
            line.put_nowait((loop.time() + delay, data))
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        line.put_nowait(None)
        await delivering


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--listen", type=int, default=0, help="port on 127.0.0.1 (0: any free one)")
    parser.add_argument("--to", required=True, help="HOST:PORT of the server")
    parser.add_argument("--rate", type=float, help="bytes per second per connection (default: no limit)")
    parser.add_argument("--delay", type=float, default=0, help="one-way delay in seconds, each direction")
    parser.add_argument("--window", type=int, default=1 << 20, help="bytes in flight per direction (with --delay)")
    args = parser.parse_args()
    host, port = args.to.rsplit(":", 1)
    # Pieces of 10 ms at the rate: smooth enough for the rates measured here, few wake-ups.
    chunk = max(4096, int(args.rate / 100)) if args.rate else 65536

    async def serve(client_reader, client_writer):
        try:
            await relay(client_reader, client_writer)
        except asyncio.CancelledError:
            # The shaper is stopping with this connection open (a client kept it alive): it ends with it,
            # without the traceback asyncio prints for a connection task that ends cancelled.
            client_writer.close()

    async def relay(client_reader, client_writer):
        try:
            server_reader, server_writer = await asyncio.open_connection(host, int(port))
        except OSError:
            client_writer.close()
            return
        down = Bucket(args.rate, chunk) if args.rate else None
        if args.delay > 0:
            # The handshake's round trip: the client's first bytes wait in the socket meanwhile.
            await asyncio.sleep(2 * args.delay)
            await asyncio.gather(delayed_pump(client_reader, server_writer, None, 65536, args.delay, args.window),
                                 delayed_pump(server_reader, client_writer, down, chunk, args.delay, args.window))
        else:
            await asyncio.gather(pump(client_reader, server_writer, None, 65536),
                                 pump(server_reader, client_writer, down, chunk))

    server = await asyncio.start_server(serve, "127.0.0.1", args.listen, backlog=256)
    bound = server.sockets[0].getsockname()[1]
    print(f"listening on 127.0.0.1:{bound}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(130)
