"""What the async queue raises when a broker cannot take or hand out a call; the gateway answers each with its status."""

from __future__ import annotations

from faasgd.errors import FaasgdError


class QueueError(FaasgdError):
    """Raised when the broker cannot take or hand out a call (unreachable, full, message too large)."""


class QueueUnavailable(QueueError):
    """Raised when the broker cannot take a call now (down, reconnecting, full, too slow): try again later."""

    http_status = 503


class QueueCallTooLarge(QueueError):
    """Raised when a call with its headers is over the broker's message limit."""

    http_status = 413
