"""What a running `ctxfit proxy` did, from its `GET /ctxfit/stats` page, summed over its
conversations for a live view: requests, how many it fitted or rejected, the tool results it
cleared and the tokens that took out of the latest requests.

Standard library only (a view that polls once every few seconds needs no HTTP client); a proxy
that does not answer is None, quietly: the view works without one.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request

DEFAULT_PROXY = "http://127.0.0.1:8787"
STATS_PATH = "/ctxfit/stats"


def fetch(url: str, timeout: float = 0.5) -> dict | None:
    """The proxy's stats page at `url` (its base URL), or None when nothing answers there."""
    try:
        with urllib.request.urlopen(url.rstrip("/") + STATS_PATH, timeout=timeout) as response:
            return json.loads(response.read())
    except (OSError, ValueError, urllib.error.URLError):
        return None


def summary(stats: dict, url: str) -> dict:
    """The stats page summed over its conversations.

    >>> summary({"totals": {"requests": 9, "fitted": 2, "rejected": 1}, "budget": 100, "conversations": {
    ...     "a": {"results_cleared": 3, "tokens_before": 900, "tokens_after": 600}}}, "http://x")
    {'url': 'http://x', 'budget': 100, 'requests': 9, 'fitted': 2, 'rejected': 1, 'conversations': 1, \
'results_cleared': 3, 'tokens_cleared': 300}
    """
    totals = stats.get("totals") or {}
    conversations = list((stats.get("conversations") or {}).values())
    return {
        "url": url,
        "budget": stats.get("budget"),
        "requests": totals.get("requests", 0),
        "fitted": totals.get("fitted", 0),
        "rejected": totals.get("rejected", 0),
        "conversations": len(conversations),
        "results_cleared": sum(c.get("results_cleared", 0) for c in conversations),
        "tokens_cleared": sum(max(c.get("tokens_before", 0) - c.get("tokens_after", 0), 0) for c in conversations),
    }


def look(url: str) -> dict | None:
    """`summary` of the proxy at `url`, or None when none answers."""
    stats = fetch(url)
    return summary(stats, url) if isinstance(stats, dict) else None
