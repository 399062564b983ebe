"""`ctxfit proxy`: fit every request an agent sends to the provider, with zero code changes.

Needs the `[proxy]` extra (aiohttp); imported only by the `proxy` command.
"""
