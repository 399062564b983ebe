"""The floor for bench/proxy.py's team case: an aiohttp proxy that forwards every request as it
came and streams the reply back, fitting nothing (what any proxy in Python costs on this machine).

    python bench/_passthrough.py UPSTREAM   # prints http://127.0.0.1:PORT once it listens
"""

from __future__ import annotations

import asyncio
import sys

import aiohttp
from aiohttp import web

SKIPPED = {"host", "content-length", "transfer-encoding", "connection"}


async def main(upstream: str) -> None:
    client = aiohttp.ClientSession(auto_decompress=False, connector=aiohttp.TCPConnector(limit=0))

    async def forward(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        headers = {k: v for k, v in request.headers.items() if k.lower() not in SKIPPED}
        async with client.request(
            request.method,
            upstream + request.rel_url.raw_path_qs,
            headers=headers,
            data=body,
            skip_auto_headers=("Accept-Encoding", "User-Agent"),
        ) as reply:
            response = web.StreamResponse(status=reply.status)
            for name, value in reply.headers.items():
                if name.lower() not in SKIPPED or name.lower() == "content-length":
                    response.headers.add(name, value)
            await response.prepare(request)
            async for chunk in reply.content.iter_any():
                await response.write(chunk)
            await response.write_eof()
            return response

    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_route("*", "/{tail:.*}", forward)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, backlog=4096)
    await site.start()
    print(f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    try:
        asyncio.run(main(sys.argv[1].rstrip("/")))
    except KeyboardInterrupt:
        pass
