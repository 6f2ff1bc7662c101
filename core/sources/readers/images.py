"""Image sizes read from their headers, and what providers charge for them by their published rules.

Only the first bytes of a base64 image are decoded (PNG, GIF, WebP and JPEG keep their size near the
start; a JPEG's frame header is searched for in the first 256 KiB). Nothing is rendered or kept.

* Anthropic: an image whose long edge exceeds 1568 px, or whose area exceeds about 1.15 megapixels,
  is scaled down (aspect kept) until it fits both; it then costs ``ceil(width × height / 750)`` tokens.
* OpenAI (``detail: high``, the default ``auto`` for large images): scaled to fit 2048 × 2048, then
  its short side to 768; 170 tokens per 512-px tile plus 85 (``low``: 85 in all). gpt-4o-mini charges
  2833 per tile plus 2833 × 2 base.
"""

from __future__ import annotations

import base64
import binascii
import math
import struct
from typing import Any

_HEAD_CHARS = 256 * 1024 * 4 // 3  # base64 characters that decode to 256 KiB
ANTHROPIC_LONG_EDGE = 1568
ANTHROPIC_MAX_PIXELS = 1_150_000
ANTHROPIC_PIXELS_PER_TOKEN = 750


def header_size(data: bytes) -> tuple[int, int] | None:
    """``(width, height)`` from an image file's first bytes, or ``None`` when it cannot be told."""
    if data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) >= 24:
        width, height = struct.unpack(">II", data[16:24])
        return _sane(width, height)
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        width, height = struct.unpack("<HH", data[6:10])
        return _sane(width, height)
    if data.startswith(b"RIFF") and data[8:12] == b"WEBP" and len(data) >= 30:
        chunk = data[12:16]
        if chunk == b"VP8 ":
            width, height = struct.unpack("<HH", data[26:30])
            return _sane(width & 0x3FFF, height & 0x3FFF)
        if chunk == b"VP8L":
            bits = int.from_bytes(data[21:25], "little")
            return _sane((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1)
        if chunk == b"VP8X":
            return _sane(int.from_bytes(data[24:27], "little") + 1, int.from_bytes(data[27:30], "little") + 1)
        return None
    if data.startswith(b"\xff\xd8"):
        return _jpeg_size(data)
    return None


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF:
            i += 1
            continue
        marker = data[i + 1]
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7 or marker == 0xFF:
            i += 1 if marker == 0xFF else 2
            continue
        length = int.from_bytes(data[i + 2 : i + 4], "big")
        if marker in (0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF):
            height, width = struct.unpack(">HH", data[i + 5 : i + 9])
            return _sane(width, height)
        i += 2 + length
    return None


def _sane(width: int, height: int) -> tuple[int, int] | None:
    return (width, height) if 0 < width <= 1 << 16 and 0 < height <= 1 << 16 else None


def base64_size(data: str) -> tuple[int, int] | None:
    """The size of a base64-encoded image, decoding only its head."""
    head = data[:_HEAD_CHARS]
    head = head[: len(head) - len(head) % 4]
    try:
        raw = base64.b64decode(head, validate=False)
    except (binascii.Error, ValueError):
        return None
    return header_size(raw)


def block_size(block: dict[str, Any]) -> tuple[int, int] | None:
    """The size of an Anthropic image block (``source.type == base64``), else ``None``."""
    source = block.get("source")
    if isinstance(source, dict) and source.get("type") == "base64" and isinstance(source.get("data"), str):
        return base64_size(source["data"])
    return None


def data_url_size(url: str) -> tuple[int, int] | None:
    """The size of an image given as a ``data:`` URL (OpenAI ``image_url``), else ``None``."""
    if not url.startswith("data:") or "," not in url[:200]:
        return None
    return base64_size(url.split(",", 1)[1])


def anthropic_tokens(width: int, height: int) -> int:
    """Anthropic's published cost of an image: scaled to fit 1568 px and 1.15 MP, then area / 750."""
    scale = min(1.0, ANTHROPIC_LONG_EDGE / max(width, height), math.sqrt(ANTHROPIC_MAX_PIXELS / (width * height)))
    w, h = max(1, int(width * scale)), max(1, int(height * scale))
    return math.ceil(w * h / ANTHROPIC_PIXELS_PER_TOKEN)


def openai_tokens(width: int, height: int, detail: str = "auto", model: str | None = None) -> int:
    """OpenAI's tile rule: fit 2048², short side to 768, 170 per 512-px tile + 85 (low detail: 85)."""
    per_tile, base = (5667, 2833) if model and model.startswith("gpt-4o-mini") else (170, 85)
    if detail == "low":
        return base
    scale = min(1.0, 2048 / max(width, height))
    w, h = width * scale, height * scale
    short = min(w, h)
    if short > 768:
        w, h = w * 768 / short, h * 768 / short
    tiles = math.ceil(w / 512) * math.ceil(h / 512)
    return per_tile * tiles + base
