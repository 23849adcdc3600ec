"""Bytes and rates, one way each for the whole package: `size_text` writes a size in words
(binary: GiB from 1 GiB up, else MiB), `parse_size` reads one, `parse_rate` reads a link's or a
fabric's rate as the C++ harness does (harness/net/link.h's ParseLinkRate: decimal prefixes,
`1gbit` = 1e9 bit/s, `bps` in bytes), and `rate_text` and `mbit` write rates back."""

from __future__ import annotations

import math
import re

import numpy as np

MIB = 2**20
GIB = 2**30

# ParseLinkRate's form, to the letter: a number without sign or exponent, then one unit.
_RATE = re.compile(r"([0-9]+(?:\.[0-9]+)?)(bit|kbit|mbit|gbit|tbit|bps|kbps|mbps|gbps)")
_RATE_PREFIX = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}
MIN_RATE = 1e6  # 1mbit: ParseLinkRate's kMinRate
MAX_RATE = 1e12  # 1tbit: its kMaxRate
_SIZE_PREFIX = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12,
                "ki": 2.0**10, "mi": 2.0**20, "gi": 2.0**30, "ti": 2.0**40}
_SIZE = re.compile(r"([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)(k|m|g|t|ki|mi|gi|ti)?b?")


def is_number(value) -> bool:
    """A real number, not NaN (a bool is none)."""
    return (isinstance(value, (int, float, np.number)) and not isinstance(value, (bool, np.bool_))
            and not math.isnan(value))


def size_text(n, missing: str = "?") -> str:
    """Bytes in words: `2.00 GiB` from 1 GiB up, else MiB to three significant digits and
    at most two decimals, no trailing zeros (`0.04 MiB`, `1.94 MiB`, `16 MiB`, `143 MiB`);
    `missing` for None, NaN or no number."""
    if not is_number(n):
        return missing
    if abs(n) >= GIB:
        return f"{n / GIB:.2f} GiB"
    mib = n / MIB
    digits = 2 - math.floor(math.log10(abs(mib))) if mib else 0
    text = f"{mib:.{min(max(digits, 0), 2)}f}"
    return (text.rstrip("0").rstrip(".") if "." in text else text) + " MiB"


def parse_rate(text) -> float:
    """Bits per second of a rate as the harness takes one (ParseLinkRate): a number and bit,
    kbit, mbit, gbit or tbit, or bps, kbps, mbps or gbps (bytes per second, times 8), decimal
    prefixes (`1gbit` = 1e9), lower case, from 1mbit to 1tbit. `unshaped` is no rate here (a
    fabric has one). ValueError for anything else, as the harness refuses it."""
    m = _RATE.fullmatch(str(text))
    if not m:
        raise ValueError(f"{text!r} is not a rate (a number and bit, kbit, mbit, gbit, tbit, bps, "
                         "kbps, mbps or gbps, as tc writes them: 200mbit, 25gbit, 1gbps)")
    unit = m.group(2)
    bits = float(m.group(1)) * _RATE_PREFIX[unit[0] if unit[0] in "kmgt" else ""]
    bits *= 8 if unit.endswith("bps") else 1
    if not MIN_RATE <= bits <= MAX_RATE:
        raise ValueError(f"{text!r}: outside what a link is shaped to (1mbit to 1tbit)")
    return bits


def parse_size(text) -> float:
    """Bytes of a size: a number, a prefix (k, m, g, t: decimal; ki, mi, gi, ti: binary) and an
    optional B (16GB, 8GiB, 4MiB); a bare number is bytes. ValueError for anything else."""
    m = _SIZE.fullmatch(str(text).strip().lower())
    if not m:
        raise ValueError(f"{text!r} is not a size (16GB, 8GiB, 4MiB, bytes)")
    size = float(m.group(1)) * _SIZE_PREFIX[m.group(2) or ""]
    if not size > 0 or not math.isfinite(size):
        raise ValueError(f"{text!r}: a size must be above 0")
    return size


def mbit(bits_per_s: float | None) -> str:
    """Mbit/s as a table's cell, with thousands separated; "" for none."""
    return "" if not is_number(bits_per_s) else f"{bits_per_s / 1e6:,.0f}"


def rate_text(bits_per_s: float) -> str:
    """A rate in words: Gbit/s from 1 Gbit/s up, else Mbit/s."""
    if bits_per_s >= 1e9:
        return f"{bits_per_s / 1e9:.3g} Gbit/s"
    return f"{bits_per_s / 1e6:.3g} Mbit/s"
