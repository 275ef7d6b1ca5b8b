"""Exceptions raised by the cohort package.

Every error the client library reports carries its status code name in ``code``
(``"invalid_argument"``, ``"unauthenticated"``, ...), as in the server's JSON errors.
"""
from __future__ import annotations

from typing import Dict, Optional, Type


class Error(Exception):
    """Base class of cohort's errors."""

    code: Optional[str] = None


class UsageError(Error, ValueError):
    """The call cannot work as made: bad argument, finished run, unknown run to resume, ..."""


class CommError(Error):
    """The server or the node agent could not be reached or refused the request."""


class AuthenticationError(CommError):
    """The API key is missing, unknown or not allowed to do this."""


# Status code name (cohort::StatusCodeName) -> exception type, for the extension.
ERROR_TYPES: Dict[str, Type[Error]] = {
    "invalid_argument": UsageError,
    "failed_precondition": UsageError,
    "already_exists": UsageError,
    "not_found": UsageError,
    "payload_too_large": UsageError,
    "unauthenticated": AuthenticationError,
    "permission_denied": AuthenticationError,
    "unavailable": CommError,
    "deadline_exceeded": CommError,
    "resource_exhausted": CommError,
    "io_error": CommError,
    "default": Error,
}
