#!/usr/bin/python3
"""delayproxy - a TCP delay line for simulating a far origin on loopback.

    delayproxy.py --upstream 127.0.0.1:8080 --delay-ms 10 [--listen 127.0.0.1:0]

Every chunk read from one side is stamped with its arrival time and written
to the other side at arrival + delay. Chunks are queued, not serialised:
many chunks (and many connections) are "on the wire" at once, so the proxy
adds latency (2 x delay per round trip) without capping throughput; only
the peer's socket buffer pushes back (reading pauses while the peer's
write buffer is above 4 MiB). EOF and close travel through the same line.

The kernel has no netem here (see shared/README.md), hence this program.

Once listening it prints "PORT <n>" on stdout. Signals:
  SIGUSR1  black hole: from now on drop every byte in both directions and
           answer nothing (connections stay open; new ones are accepted)
  SIGUSR2  back to normal forwarding (new data only)
  SIGTERM  exit
"""
import argparse
import asyncio
import collections
import signal
import socket
import sys

HIGH_WATER = 4 << 20


class State:
    blackhole = False
    conns = 0


class Half:
    """One direction: a delay queue from `src` transport to `dst` transport."""

    def __init__(self, loop, delay):
        self.loop = loop
        self.delay = delay
        self.q = collections.deque()  # (deliver_at, bytes | None for EOF)
        self.timer = None
        self.dst = None        # transport to write to
        self.src = None        # transport we read from (for backpressure)
        self.closed = False

    def push(self, data):
        if State.blackhole and data is not None:
            return
        self.q.append((self.loop.time() + self.delay, data))
        if self.timer is None:
            self._arm()

    def _arm(self):
        if self.q and self.timer is None and self.dst is not None:
            self.timer = self.loop.call_at(self.q[0][0], self._flush)

    def _flush(self):
        self.timer = None
        now = self.loop.time()
        while self.q and self.q[0][0] <= now:
            _, data = self.q.popleft()
            if self.dst.is_closing():
                self.q.clear()
                return
            if data is None:
                if self.dst.can_write_eof():
                    self.dst.write_eof()
                else:
                    self.dst.close()
                self.closed = True
            elif data == b"":
                self.dst.close()          # source closed: close after the delay
            else:
                self.dst.write(data)
        self._arm()


class Side(asyncio.Protocol):
    """Protocol of one socket; `out` is the Half carrying its data away,
    `inn` the Half bringing data to it."""

    def __init__(self, out, inn):
        self.out, self.inn = out, inn
        self.transport = None

    def connection_made(self, transport):
        self.transport = transport
        self.out.src = transport
        self.inn.dst = transport
        self.inn._arm()

    def data_received(self, data):
        self.out.push(data)

    def eof_received(self):
        self.out.push(None)
        return True  # keep the transport for the other direction

    def connection_lost(self, exc):
        self.out.push(b"")

    # The peer's write buffer is full: stop reading what feeds it.
    def pause_writing(self):
        if self.inn.src is not None:
            self.inn.src.pause_reading()

    def resume_writing(self):
        if self.inn.src is not None and not self.inn.src.is_closing():
            self.inn.src.resume_reading()


async def handle_client(loop, sock, upstream, delay):
    up = Half(loop, delay)    # client -> upstream
    down = Half(loop, delay)  # upstream -> client
    client_side = Side(up, down)
    ctransport, _ = await loop.connect_accepted_socket(lambda: client_side, sock)
    ctransport.set_write_buffer_limits(high=HIGH_WATER)
    ctransport.pause_reading()
    try:
        utransport, _ = await loop.create_connection(
            lambda: Side(down, up), upstream[0], upstream[1])
    except OSError:
        ctransport.abort()
        return
    utransport.set_write_buffer_limits(high=HIGH_WATER)
    for t in (ctransport, utransport):
        s = t.get_extra_info("socket")
        if s is not None:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    ctransport.resume_reading()


async def serve(listen, upstream, delay):
    loop = asyncio.get_running_loop()
    lsock = socket.socket()
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(listen)
    lsock.listen(1024)
    lsock.setblocking(False)
    print(f"PORT {lsock.getsockname()[1]}", flush=True)

    def blackhole(on):
        State.blackhole = on
        print(f"BLACKHOLE {int(on)}", flush=True)  # the caller waits for this

    loop.add_signal_handler(signal.SIGUSR1, blackhole, True)
    loop.add_signal_handler(signal.SIGUSR2, blackhole, False)
    stop = loop.create_future()
    loop.add_signal_handler(signal.SIGTERM, stop.set_result, None)
    loop.add_signal_handler(signal.SIGINT, stop.set_result, None)

    async def accept_loop():
        while True:
            sock, _ = await loop.sock_accept(lsock)
            loop.create_task(handle_client(loop, sock, upstream, delay))

    task = loop.create_task(accept_loop())
    await stop
    task.cancel()
    lsock.close()


def hostport(s):
    h, _, p = s.rpartition(":")
    return (h or "127.0.0.1", int(p))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--listen", default="127.0.0.1:0", type=hostport)
    ap.add_argument("--upstream", required=True, type=hostport)
    ap.add_argument("--delay-ms", type=float, default=10.0,
                    help="one-way delay in ms (RTT = 2x)")
    a = ap.parse_args(argv)
    asyncio.run(serve(a.listen, a.upstream, a.delay_ms / 1000.0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
