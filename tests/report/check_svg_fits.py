#!/usr/bin/env python3
"""Renders SVG charts with rsvg-convert and fails when any ink falls
outside the picture: each file is rendered a second time on a canvas 400
pixels wider and taller (same drawing), and every pixel of the margin added
must stay white. Text cut at the edge (a legend too long for its place)
shows there.

usage: check_svg_fits.py FILE.svg..."""
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

MARGIN = 400


def decode_png(data):
    """(width, height, rows of RGBA bytes) of an 8-bit RGBA or RGB PNG."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    position, idat, width = 8, b"", None
    while position < len(data):
        length, kind = struct.unpack(">I4s", data[position:position + 8])
        body = data[position + 8:position + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            if depth != 8 or colour not in (2, 6):
                raise ValueError(f"PNG of depth {depth}, colour type {colour}")
            channels = 4 if colour == 6 else 3
        elif kind == b"IDAT":
            idat += body
        position += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, previous, offset = [], bytearray(stride), 0
    for _ in range(height):
        kind, line = raw[offset], bytearray(raw[offset + 1:offset + 1 + stride])
        offset += 1 + stride
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                estimate = left + up - corner
                distances = (abs(estimate - left), abs(estimate - up), abs(estimate - corner))
                predictor = (left, up, corner)[distances.index(min(distances))]
                line[i] = (line[i] + predictor) & 255
        rows.append(bytes(line))
        previous = line
    return width, height, channels, rows


def ink_outside(path, scratch):
    """Pixels drawn beyond the picture's declared width and height."""
    text = open(path).read()
    match = re.search(r'<svg[^>]*width="(\d+)" height="(\d+)" viewBox="0 0 (\d+) (\d+)"', text)
    if not match:
        raise ValueError(f"{path}: no <svg width height viewBox>")
    width, height = int(match.group(1)), int(match.group(2))
    wider = text.replace(match.group(0), match.group(0)
                         .replace(f'width="{width}"', f'width="{width + MARGIN}"')
                         .replace(f'height="{height}"', f'height="{height + MARGIN}"')
                         .replace(f'viewBox="0 0 {width} {height}"',
                                  f'viewBox="0 0 {width + MARGIN} {height + MARGIN}"'), 1)
    # The background stays the picture's own size, so the margin is blank
    # unless something is drawn there.
    wider = wider.replace('<rect width="100%" height="100%"',
                          f'<rect width="{width}" height="{height}"', 1)
    svg = os.path.join(scratch, "wider.svg")
    png = os.path.join(scratch, "wider.png")
    with open(svg, "w") as file:
        file.write(wider)
    subprocess.run(["rsvg-convert", "-b", "white", "-o", png, svg], check=True)
    rendered_width, rendered_height, channels, rows = decode_png(open(png, "rb").read())
    outside = 0
    for y, row in enumerate(rows):
        for x in range(rendered_width):
            if x < width and y < height:
                continue
            pixel = row[x * channels:x * channels + 3]
            if pixel != b"\xff\xff\xff":
                outside += 1
    return outside


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    if shutil.which("rsvg-convert") is None:
        print("FAIL: rsvg-convert is not installed (Debian: librsvg2-bin; "
              "scripts/install-deps.sh installs it)")
        return 1
    failed = False
    with tempfile.TemporaryDirectory(prefix="svg-fit-") as scratch:
        for path in sys.argv[1:]:
            outside = ink_outside(path, scratch)
            print(f"{path}: {outside} pixels drawn outside the picture")
            failed |= outside > 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
