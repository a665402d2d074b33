"""The one HTTP POST of the webhook and Slack channels, which never follows a redirect.

A redirect followed would send the notice, answer link included, to whatever host a 3xx
names: a 3xx is refused for good instead, as any other answer that is not a success.
"""

from __future__ import annotations

from collections.abc import Mapping

import aiohttp

from ._dispatch import DeliveryError

__all__ = ["post_json"]


async def post_json(
    url: str, body: bytes, headers: Mapping[str, str], *, seconds: float, peer: str
) -> int:
    """POST ``body`` to ``url`` within ``seconds`` and return the status. ``peer`` names
    the receiver in errors, never the URL (its path may be a secret). A 3xx is refused for
    good (:class:`DeliveryError`); every other status is the channel's to judge."""
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=seconds)) as session,
            session.post(url, data=body, headers=headers, allow_redirects=False) as reply,
        ):
            status = reply.status
    except (aiohttp.ClientError, TimeoutError) as error:  # its text may hold the URL
        raise DeliveryError(f"could not reach {peer} ({type(error).__name__})") from None
    if 300 <= status < 400:
        message = f"{peer} answered {status}, a redirect, which is never followed"
        raise DeliveryError(message, permanent=True)
    return status
