"""argparse types shared by the two commands, ``mcp-client`` (:mod:`mcp_client.cli`) and
``replay`` (:mod:`mcp_client.replay.run`).

Their own module, so that neither command imports the other: ``cli`` starts
``replay_run`` for its ``replay`` subcommand, and ``replay_run`` needs this type.
"""

from __future__ import annotations

import argparse

__all__ = ["seconds_argument"]


def seconds_argument(text: str) -> float:
    """argparse type for a positive, finite number of seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("not a number: %r" % text) from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError("must be a positive number of seconds, not %r" % text)
    return value
