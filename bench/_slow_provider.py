"""A provider that answers as a real one does at an agent's pace: after the delay the client
names (`x-bench-delay`, seconds; none: at once), for bench/proxy.py's `--pace` case. Anthropic
Messages only: a short JSON reply whose usage reports about the body's size (a quarter of its bytes).

    python bench/_slow_provider.py   # prints http://127.0.0.1:PORT once it listens
"""

from __future__ import annotations

import asyncio
import gc

import orjson
from aiohttp import web


async def messages(request: web.Request) -> web.Response:
    body = await request.read()
    delay = float(request.headers.get("x-bench-delay", "0"))
    if delay > 0:
        await asyncio.sleep(delay)
    reply = {
        "id": "msg_bench", "type": "message", "role": "assistant", "model": "bench", "stop_reason": "end_turn",
        "content": [{"type": "text", "text": "Next."}],
        "usage": {"input_tokens": len(body) // 4, "output_tokens": 2},
    }  # fmt: skip
    return web.Response(body=orjson.dumps(reply), content_type="application/json")


async def main() -> None:
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post("/v1/messages", messages)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, backlog=4096)
    await site.start()
    gc.freeze()
    print(f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
