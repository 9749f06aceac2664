#!/usr/bin/env python3
"""A TCP forwarder that delivers every chunk a fixed time after it was read, each way
(a queue: a stream of chunks pays the delay once, as on a long link). For
bench/links-regions.sh where the kernel has no `tc netem`.

    python3 bench/delay-proxy.py LISTEN_HOST LISTEN_PORT TARGET_HOST TARGET_PORT ONE_WAY_MS
"""
import asyncio
import sys


async def pump(reader, writer, delay):
    queue = asyncio.Queue()

    async def deliver():
        loop = asyncio.get_running_loop()
        while True:
            due, chunk = await queue.get()
            if chunk is None:
                break
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            writer.write(chunk)
            await writer.drain()
        writer.close()

    task = asyncio.create_task(deliver())
    loop = asyncio.get_running_loop()
    try:
        while True:
            chunk = await reader.read(65536)
            if not chunk:
                break
            queue.put_nowait((loop.time() + delay, chunk))
    except ConnectionError:
        pass
    queue.put_nowait((0, None))
    try:
        await task
    except ConnectionError:
        pass


async def main():
    host, port, target_host, target_port, ms = sys.argv[1:6]
    delay = int(ms) / 1000

    async def serve(client_reader, client_writer):
        try:
            up_reader, up_writer = await asyncio.open_connection(target_host, int(target_port))
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(pump(client_reader, up_writer, delay), pump(up_reader, client_writer, delay))

    server = await asyncio.start_server(serve, host, int(port))
    async with server:
        await server.serve_forever()


asyncio.run(main())
