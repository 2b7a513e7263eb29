"""Open a page in real headless Chromium (Debian's `chromium` package): its DOM, console and pixels.

No browser is downloaded at run time: `.ci/run` installs the distribution's package when it is
absent. Chromium prints every console message (errors, uncaught exceptions, CSP violations)
as an `INFO:CONSOLE` line with `--enable-logging=stderr`; the screenshot is decoded here
(PNG is zlib plus five row filters) so no imaging library is needed.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
import zlib
from dataclasses import dataclass
from pathlib import Path

import pytest

BROWSERS = ("chromium", "chromium-browser")


INSTALL = "sudo apt-get install -y chromium"
"""The install line the README gives (Debian/Ubuntu); `.ci/run` runs it when Chromium is absent."""


def browser() -> str:
    """The Chromium binary; the test is skipped, naming the install line, when there is none."""
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    pytest.skip(f"headless Chromium is needed for the HTML tests and is not installed: {INSTALL} "
                "(README.md, Quick start)")


@dataclass(frozen=True)
class Rendered:
    dom: str
    console: tuple[str, ...]
    png: bytes


def _flags(profile: Path) -> list[str]:
    return [browser(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--disable-extensions", f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
            "--hide-scrollbars"]


def render(page: Path, tmp: Path, size: tuple[int, int] = (1280, 1600)) -> Rendered:
    """The page's DOM after load, the console lines of both loads, and a screenshot."""
    url = page.resolve().as_uri()
    dom = subprocess.run([*_flags(tmp / "profile-dom"), "--dump-dom", url], capture_output=True,
                         text=True, timeout=120, check=True)
    shot = tmp / "screenshot.png"
    pic = subprocess.run([*_flags(tmp / "profile-shot"), f"--screenshot={shot}",
                          f"--window-size={size[0]},{size[1]}", url],
                         capture_output=True, text=True, timeout=120, check=True)
    console = tuple(line for line in (dom.stderr + pic.stderr).splitlines() if ":CONSOLE" in line)
    return Rendered(dom.stdout, console, shot.read_bytes())


def pixels(png: bytes) -> tuple[int, int, list[bytes]]:
    """(width, height, rows of RGB(A) bytes) of an 8-bit non-interlaced PNG."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, data, header = 8, b"", None
    while pos < len(png):
        length, kind = struct.unpack(">I4s", png[pos:pos + 8])
        chunk = png[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            data += chunk
        pos += 12 + length
    assert header is not None
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and interlace == 0 and colour in (2, 6), header
    channels = 4 if colour == 6 else 3
    raw = zlib.decompress(data)
    stride = width * channels
    rows: list[bytes] = []
    previous = bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            left = line[x - channels] if x >= channels else 0
            up = previous[x]
            corner = previous[x - channels] if x >= channels else 0
            if kind == 1:
                line[x] = (line[x] + left) & 0xFF
            elif kind == 2:
                line[x] = (line[x] + up) & 0xFF
            elif kind == 3:
                line[x] = (line[x] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                predictor = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                line[x] = (line[x] + predictor) & 0xFF
        rows.append(bytes(line))
        previous = line
    return width, height, rows


def colours(png: bytes, step: int = 4) -> tuple[int, float]:
    """(distinct colours, share of non-white pixels) over a grid of sampled pixels."""
    width, height, rows = pixels(png)
    channels = len(rows[0]) // width
    seen: set[bytes] = set()
    inked = total = 0
    for y in range(0, height, step):
        row = rows[y]
        for x in range(0, width, step):
            px = row[x * channels:x * channels + 3]
            seen.add(px)
            total += 1
            inked += px != b"\xff\xff\xff"
    return len(seen), inked / total
