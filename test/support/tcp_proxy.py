#!/usr/bin/env python3
"""A TCP proxy on 127.0.0.1 whose faults a test switches at runtime.

Usage: tcp_proxy.py --port P --target T --control /path/to/control.sock [--netns NAME]

Forwards every connection to 127.0.0.1:P on to 127.0.0.1:T. With --netns,
127.0.0.1:P is the loopback of the network namespace NAME (made with `ip
netns add NAME`, its lo up) and T is still this process's: a program run in
that namespace (`ip netns exec NAME ...`) reaches the broker only through
the proxy, so `stall` cuts that one program off, on loopback alone. The control
channel is a Unix socket: a client sends one command per line and gets one
line back ("ok <mode>" or "error ..."):

  pass        forward bytes as they come
  delay MS    hold every chunk MS milliseconds before forwarding it
  stall       forward nothing, in both directions, but keep connections open
  drop        close every open connection now, then behave as `pass`
  refuse      close new connections at once (open ones keep passing)
  status      answer with the mode and the number of open connections

Python 3.11 standard library only. It stops on SIGTERM or SIGINT.
"""

import argparse
import asyncio
import ctypes
import os
import signal
import socket

CLONE_NEWNET = 0x40000000


def listener_in_netns(name, port):
    """A listening socket on 127.0.0.1:port of network namespace `name`: made
    after entering it (a socket stays in the namespace it was made in), and
    the process goes back to its own at once."""
    libc = ctypes.CDLL(None, use_errno=True)
    own = os.open("/proc/self/ns/net", os.O_RDONLY)
    target = os.open(f"/var/run/netns/{name}", os.O_RDONLY)
    try:
        if libc.setns(target, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns into network namespace {name}")
        try:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", port))
            s.listen(128)
            s.setblocking(False)
            return s
        finally:
            if libc.setns(own, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns back into the proxy's own network namespace")
    finally:
        os.close(own)
        os.close(target)


class Proxy:
    def __init__(self, target):
        self.target = target
        self.mode = "pass"
        self.delay = 0.0  # seconds, in `delay` mode
        self.resumed = asyncio.Event()  # set unless stalled
        self.resumed.set()
        self.connections = set()  # (client writer, upstream writer) pairs

    def set_mode(self, words):
        cmd = words[0] if words else ""
        if cmd == "pass":
            self.mode, self.delay = "pass", 0.0
        elif cmd == "delay" and len(words) == 2 and words[1].isdigit():
            self.mode, self.delay = "delay", int(words[1]) / 1000.0
        elif cmd == "stall":
            self.mode = "stall"
        elif cmd == "drop":
            # Abort (RST) both sides of every connection, then pass.
            for pair in list(self.connections):
                for w in pair:
                    w.transport.abort()
            self.connections.clear()
            self.mode, self.delay = "pass", 0.0
        elif cmd == "refuse":
            self.mode = "refuse"
        elif cmd == "status":
            return f"ok {self.mode} {len(self.connections)}"
        else:
            return f"error unknown command {' '.join(words)!r}"
        if self.mode == "stall":
            self.resumed.clear()
        else:
            self.resumed.set()
        return f"ok {self.mode}"

    async def pump(self, reader, writer):
        """Copies one direction chunk by chunk, obeying the mode per chunk."""
        try:
            while True:
                chunk = await reader.read(65536)
                if not chunk:
                    break
                # A stalled chunk waits here; since nothing more is read, TCP
                # flow control stops the sender too.
                await self.resumed.wait()
                if self.delay > 0:
                    await asyncio.sleep(self.delay)
                    await self.resumed.wait()  # stalled while delayed
                writer.write(chunk)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.transport.abort()  # ends the other direction too

    async def on_client(self, client_reader, client_writer):
        if self.mode == "refuse":
            client_writer.transport.abort()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target)
        except OSError:
            client_writer.transport.abort()
            return
        pair = (client_writer, up_writer)
        self.connections.add(pair)
        try:
            # When one direction ends, the other's socket is closed by it.
            await asyncio.gather(self.pump(client_reader, up_writer), self.pump(up_reader, client_writer))
        finally:
            self.connections.discard(pair)
            client_writer.transport.abort()
            up_writer.transport.abort()

    async def on_control(self, reader, writer):
        try:
            while line := await reader.readline():
                writer.write((self.set_mode(line.decode().split()) + "\n").encode())
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()


async def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--target", type=int, required=True)
    p.add_argument("--control", required=True, help="path of the control Unix socket")
    p.add_argument("--netns", help="listen on the loopback of this network namespace")
    args = p.parse_args()

    proxy = Proxy(args.target)
    if args.netns:
        server = await asyncio.start_server(proxy.on_client, sock=listener_in_netns(args.netns, args.port))
    else:
        server = await asyncio.start_server(proxy.on_client, "127.0.0.1", args.port, reuse_address=True)
    # The control socket is created last: once it accepts, the proxy listens.
    control = await asyncio.start_unix_server(proxy.on_control, args.control)

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    server.close()
    control.close()
    proxy.set_mode(["drop"])


if __name__ == "__main__":
    asyncio.run(main())
