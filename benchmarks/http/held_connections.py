#!/usr/bin/env python3
"""Holds connections open against one HTTP server, for the HTTP benchmark
(scripts/bench-http.sh): N idle keep-alive connections (each sends one GET
first, reads its answer, then stays open and quiet) and M slow clients (each
sends a request's headers a byte at a time, one byte every --slow-interval
seconds, for as long as the server lets it).

It prints one JSON line when every connection is open ({"idle": n, "slow":
m, "failed": k}), then keeps them until it gets SIGTERM, and prints a last
line: how many idle connections the server closed meanwhile,
and how many slow clients it answered (408) or cut off.

    held_connections.py --port 8081 --idle 10000 --slow 100 --path /health
"""
import argparse
import asyncio
import json
import resource
import signal
import sys


async def idle_connection(host, port, path, opened, stats):
    try:
        reader, writer = await asyncio.open_connection(host, port)
    except OSError:
        stats["failed"] += 1
        opened.release()
        return
    try:
        writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        await reader.readexactly(length)
        stats["idle"] += 1
        opened.release()
        if await reader.read(1) == b"":  # waits until the server closes it
            stats["idle_closed_by_server"] += 1
    except (OSError, asyncio.IncompleteReadError):
        stats["failed"] += 1
        opened.release()
    finally:
        writer.close()


async def slow_client(host, port, path, interval, opened, stats):
    try:
        reader, writer = await asyncio.open_connection(host, port)
    except OSError:
        stats["failed"] += 1
        opened.release()
        return
    stats["slow"] += 1
    opened.release()
    request = f"GET {path} HTTP/1.1\r\nHost: {host}\r\nX-Slow: {'s' * 200}\r\n\r\n".encode()
    try:
        for i in range(len(request)):
            writer.write(request[i:i + 1])
            await writer.drain()
            try:
                got = await asyncio.wait_for(reader.read(64), timeout=interval)
            except asyncio.TimeoutError:
                continue
            stats["slow_answered_408" if b" 408 " in got else "slow_cut_off"] += 1
            return
        stats["slow_completed"] += 1
    except OSError:
        stats["slow_cut_off"] += 1
    finally:
        writer.close()


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--idle", type=int, default=10000)
    ap.add_argument("--slow", type=int, default=100)
    ap.add_argument("--path", default="/health")
    ap.add_argument("--slow-interval", type=float, default=1.0)
    a = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    stats = {k: 0 for k in ("idle", "slow", "failed", "idle_closed_by_server", "slow_answered_408",
                            "slow_cut_off", "slow_completed")}
    opened = asyncio.Semaphore(0)
    tasks = []
    for i in range(a.idle):
        tasks.append(asyncio.create_task(idle_connection(a.host, a.port, a.path, opened, stats)))
        if i % 200 == 199:
            await asyncio.sleep(0.01)  # no SYN flood: the listen backlog is finite
    for _ in range(a.slow):
        tasks.append(asyncio.create_task(slow_client(a.host, a.port, a.path, a.slow_interval, opened, stats)))
    for _ in range(a.idle + a.slow):
        await opened.acquire()
    print(json.dumps({"idle": stats["idle"], "slow": stats["slow"], "failed": stats["failed"]}), flush=True)

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()
    print(json.dumps(stats), flush=True)
    for t in tasks:
        t.cancel()


if __name__ == "__main__":
    asyncio.run(main())
