"""Run filters and sort orders of ``Api.runs`` (docs/python-api.md, "Filters"): the MongoDB-style
filters W&B users write (``{"config.lr": 0.1}``, ``{"$or": [...]}``, ``{"summary_metrics.acc":
{"$gt": 0.9}}``) as the server's filter clauses (docs/api.md, run listing), and ``order=`` as its
sort parameter.
"""
from __future__ import annotations

import datetime
import json
import math
import numbers
import re
from typing import Any, Dict, List, Optional, Sequence, Union

from .errors import UsageError

_OPS = {"$eq": "==", "$ne": "!=", "$in": "in", "$nin": "not in", "$gt": ">", "$lt": "<",
        "$contains": "~", "$regex": "~"}
# Filter fields under W&B's names (the server's names pass through).
_FIELDS = {"tags": "tag", "created_at": "created", "createdAt": "created",
           "updated_at": "updated", "updatedAt": "updated", "heartbeat_at": "updated",
           "display_name": "name"}
_TIME_FIELDS = ("created", "updated")
# What would make a $regex pattern match otherwise than as a substring.
_REGEX_META = re.compile(r"[.^$*+?{}\[\]\\|()]")
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_SORTS = {"created": "created", "created_at": "created", "createdAt": "created",
          "updated": "updated", "updated_at": "updated", "heartbeat_at": "updated",
          "name": "name", "state": "state", "group": "group", "job_type": "job_type"}


def _operand(v: Any) -> Any:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float, str)):
        return v
    raise UsageError(f"filters: a value must be a string, number or bool, got {v!r}")


def _as_text(v: Any) -> str:
    v = _operand(v)
    return v if isinstance(v, str) else json.dumps(v)


def _time_ms(field: str, v: Any) -> int:
    """A `created`/`updated` operand as the server compares it, milliseconds since 1970, from
    an int, a ``datetime``/``date`` or an ISO 8601 text (naive: UTC)."""
    if isinstance(v, bool):
        pass
    elif isinstance(v, numbers.Real):
        if math.isfinite(v):
            return int(v)
    elif isinstance(v, datetime.datetime):
        dt = v if v.tzinfo else v.replace(tzinfo=datetime.timezone.utc)
        return (dt - _EPOCH) // datetime.timedelta(milliseconds=1)
    elif isinstance(v, datetime.date):
        return _time_ms(field, datetime.datetime(v.year, v.month, v.day))
    elif isinstance(v, str):
        text = v.strip()
        if re.fullmatch(r"-?\d+", text):
            return int(text)
        try:
            dt = datetime.datetime.fromisoformat(
                text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
        except ValueError:
            pass
        else:
            return _time_ms(field, dt)
    raise UsageError(f"filters: {field!r} expects milliseconds since 1970, a datetime or an "
                     f"ISO 8601 time ('2024-05-01T12:00:00', UTC unless it names a zone), "
                     f"got {v!r}")


def _field(field: str) -> str:
    """A filter field under the server's name (W&B's spellings accepted)."""
    if field.startswith("summary_metrics.") and len(field) > len("summary_metrics."):
        return "summary." + field[len("summary_metrics."):]
    return _FIELDS.get(field, field)


def build_filters(filters: Union[None, Dict[str, Any], Sequence[Dict[str, Any]]]) -> List[dict]:
    """The server's filter clauses (docs/api.md, "List") from a dict or a clause list.

    Dict form: ``{"group": "DDP", "state": ["crashed", "failed"], "config.lr": 0.1,
    "summary.acc": {"$gt": 0.9}, "job_type": {"$ne": "worker"}, "tags": "baseline"}``; a list is
    ``in``; operators ``$eq $ne $in $nin $gt $lt $contains`` (``$regex`` reads as contains: a
    pattern with regex metacharacters is a UsageError); ``$and`` takes a list of such dicts.
    W&B's field names are read as the server's: ``created_at``/``createdAt`` (operands in ms,
    ``datetime`` or ISO 8601 text), ``updated_at``, ``display_name``, ``summary_metrics.<key>``.
    A list of ``{"field", "op", "value"|"values"}`` clauses (the workspace's saved-view form)
    passes through unchanged.
    """
    if filters is None:
        return []
    if isinstance(filters, (list, tuple)):
        out = []
        for c in filters:
            if not isinstance(c, dict) or "field" not in c:
                raise UsageError(f"filters: expected {{field, op, value}} clauses, got {c!r}")
            out.append(dict(c))
        return out
    if not isinstance(filters, dict):
        raise UsageError(f"filters: expected a dict or a list of clauses, got {filters!r}")
    out: List[dict] = []
    for field, cond in filters.items():
        if field == "$and":
            if not isinstance(cond, (list, tuple)):
                raise UsageError("filters: $and expects a list of filter dicts")
            for sub in cond:
                out += build_filters(sub)
            continue
        if field.startswith("$"):
            raise UsageError(f"filters: {field} is not supported (clauses combine with AND; "
                             "use $in for alternatives)")
        field = _field(field)
        if isinstance(cond, dict):
            for op, value in cond.items():
                if op not in _OPS:
                    raise UsageError(f"filters: unknown operator {op!r} on {field!r} "
                                     f"(use {', '.join(_OPS)})")
                if op == "$regex" and isinstance(value, str) and _REGEX_META.search(value):
                    raise UsageError(
                        f"filters: $regex on {field!r} is a substring match here (as "
                        f"$contains), not a regular expression: {value!r} holds regex "
                        "metacharacters; give the plain text the values contain")
                out.append(_clause(field, _OPS[op], value))
        elif isinstance(cond, (list, tuple)):
            out.append(_clause(field, "in", cond))
        else:
            out.append(_clause(field, "==", cond))
    return out


def _clause(field: str, op: str, value: Any) -> dict:
    if field in _TIME_FIELDS:
        value = ([_time_ms(field, v) for v in value] if isinstance(value, (list, tuple))
                 else _time_ms(field, value))
    if op in ("in", "not in"):
        if not isinstance(value, (list, tuple)) or not value:
            raise UsageError(f"filters: {field!r} {op} expects a non-empty list")
        return {"field": field, "op": op, "values": [_as_text(v) for v in value]}
    return {"field": field, "op": op, "value": _operand(value)}


def _natural_key(label: str) -> List[Any]:
    """Sorts "rank_2" before "rank_10"."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part)
            for part in re.split(r"(\d+)", label)]


def _sort(order: Optional[str]) -> str:
    if not order:
        return "-created"
    desc = order.startswith("-")
    name = order.lstrip("+-")
    # A config or summary key, as W&B writes it too ("-summary_metrics.loss").
    for prefix, to in (("config.", "config."), ("summary.", "summary."),
                       ("summary_metrics.", "summary.")):
        if name.startswith(prefix) and len(name) > len(prefix):
            return ("-" if desc else "") + to + name[len(prefix):]
    if name not in _SORTS:
        raise UsageError(f"order: unknown field {name!r} (use created, updated, name, state, "
                         "group, job_type, config.<key>, summary.<key>; - for descending)")
    return ("-" if desc else "") + _SORTS[name]
