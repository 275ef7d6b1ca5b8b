"""Alerts raised by the training code: ``run.alert(title, text, level, wait_duration)``.

The alert goes through the node agent like logged values (in order after them, kept in the
agent's WAL until the server has it) to the writer's alerts on the server, which keeps one open
alert per writer and title and notifies the project's webhooks (docs/python.md, "Alerts").
"""
from __future__ import annotations

import datetime
import enum
import math
from typing import Any, Tuple, Union

from .errors import UsageError


class AlertLevel(str, enum.Enum):
    """The level of an alert (``cohort.AlertLevel.WARN``; the strings "INFO", "WARN" and
    "ERROR" are accepted too)."""

    INFO = "INFO"
    WARN = "WARN"
    ERROR = "ERROR"


def normalize(title: Any, text: Any, level: Union[AlertLevel, str, None],
              wait_duration: Union[int, float, datetime.timedelta, None]) -> Tuple[str, str, str,
                                                                                    float]:
    """The arguments of ``run.alert`` as the extension takes them: (title, text, "INFO" |
    "WARN" | "ERROR", seconds). TypeError / UsageError (a ValueError) name the argument."""
    if not isinstance(title, str):
        raise TypeError(f"alert: title must be a str, not {type(title).__name__}")
    if not isinstance(text, str):
        raise TypeError(f"alert: text must be a str, not {type(text).__name__}")
    if level is None:
        name = AlertLevel.INFO.value
    elif isinstance(level, AlertLevel):
        name = level.value
    elif isinstance(level, str):
        name = level.strip().upper()
        if name not in AlertLevel.__members__:
            raise UsageError(f"alert: level must be one of 'INFO', 'WARN' or 'ERROR', not "
                             f"{level!r}")
    else:
        raise TypeError(f"alert: level must be a str or cohort.AlertLevel, not "
                        f"{type(level).__name__}")
    if wait_duration is None:
        seconds = 0.0
    elif isinstance(wait_duration, datetime.timedelta):
        seconds = wait_duration.total_seconds()
    elif isinstance(wait_duration, (int, float)) and not isinstance(wait_duration, bool):
        seconds = float(wait_duration)
    else:
        raise TypeError("alert: wait_duration must be an int, float (seconds) or "
                        f"datetime.timedelta, not {type(wait_duration).__name__}")
    if not math.isfinite(seconds) or seconds < 0:
        raise UsageError(f"alert: wait_duration must be >= 0 seconds, not {wait_duration!r}")
    return title, text, name, seconds
