"""JSON in and out of stored files, fast, with exactly the bytes and values of the standard library.

Every stored ``bundleHash`` is the SHA-256 of ``json.dumps(data, sort_keys=True, separators=(",",
":"), ensure_ascii=False)``, and every stored file was read with :func:`json.loads`. Re-scoring a
team's whole history spends much of its time there, so both go through orjson, which is about ten
times faster and gives the same bytes and values except in a few shapes, each handled here by
falling back to the standard library:

- floats below 1e-4 (orjson spells 1e-05 as ``1e-5`` or ``0.00001``) and NaN or infinity (orjson
  writes ``null``; ``json`` writes ``NaN``): :func:`dumps_canonical` is told whether the data
  holds such a float by its caller, which knows where floats can be;
- integers beyond 64 bits (orjson cannot write them, and reads them as floats; below the signed
  minimum that starts at 19 digits, -9223372036854775809): a run of 19 digits anywhere in the
  input sends it to ``json`` (found with ``bytes.translate``, about 1 µs per KB; a regular
  expression takes ten times longer);
- anything orjson refuses (NaN literals, lone surrogates, a byte-order mark, deep nesting): the
  standard library then reads or writes it, or raises exactly what it always raised.

UTF-8 byte order equals code-point order, so orjson's sorted keys are ``sort_keys``'s.
"""

from __future__ import annotations

import json
import math
from typing import Any

import orjson

# Switched off by the tests to compare both paths byte for byte (re-scoring's trust in a stored
# result's evidence, pipeline.TRUST_STORED, rests on it too and is off with it).
FAST = True
_DIGITS_AS_ZERO = bytes(48 if 48 <= byte <= 57 else 32 for byte in range(256))
_NINETEEN_DIGITS = b"0" * 19


def reference_canonical(data: Any) -> bytes:
    """The definition of the canonical form."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def plain_float(value: float) -> bool:
    """True when orjson writes ``value`` as ``json.dumps`` does."""
    return value == 0.0 or (math.isfinite(value) and abs(value) >= 1e-4)


def dumps_canonical(data: Any, *, plain_floats: bool) -> bytes:
    """The canonical form of ``data``. ``plain_floats``: every float in ``data`` satisfies
    :func:`plain_float` (the caller checks the few places floats can be)."""
    if FAST and plain_floats:
        fast = orjson_canonical(data)
        if fast is not None:
            return fast
    return reference_canonical(data)  # a float to check, a huge integer or a lone surrogate


def orjson_canonical(data: Any) -> bytes | None:
    """orjson's canonical text of ``data``, or None where orjson cannot write it (an integer
    beyond 64 bits, a lone surrogate). Its floats are not checked: this is the canonical form only
    where :func:`plain_float` holds for every one of them."""
    try:
        return orjson.dumps(data, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:
        return None


def loads(raw: bytes) -> Any:
    """Parse a stored file as :func:`json.loads` parses its UTF-8 text (same values, same errors:
    ``UnicodeDecodeError``, ``json.JSONDecodeError`` or ``RecursionError``)."""
    if FAST and _NINETEEN_DIGITS not in raw.translate(_DIGITS_AS_ZERO):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass  # NaN, a BOM, bad UTF-8, deep nesting...: the reference reads or reports it
    return reference_loads(raw)


def reference_loads(raw: bytes) -> Any:
    """What stored files were always read with: ``Path.read_text`` (UTF-8, universal newlines, so
    error positions are the same too) and :func:`json.loads`."""
    return json.loads(raw.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n"))

