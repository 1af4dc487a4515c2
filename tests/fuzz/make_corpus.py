#!/usr/bin/env python3
"""Writes the fuzzers' seed corpus: tiny valid files of every format and variant the readers
accept (standard library only; every file is built here, byte by byte).

    tests/fuzz/make_corpus.py [OUT]    (default: tests/fuzz/corpus next to this script)

The corpus is committed; rerun this after changing it and commit the result. Reproducers of
fixed findings live beside the generated seeds (names starting with "crash-" or "finding-") and
are kept when the script runs again.
"""
import math
import os
import struct
import sys
import zlib


def pixels(width, height, channels, bits=8, seed=1):
    """A small deterministic picture: gradients plus a pseudo-random speckle."""
    top = (1 << bits) - 1
    state = seed
    rows = []
    for y in range(height):
        row = []
        for x in range(width):
            for c in range(channels):
                state = (state * 1103515245 + 12345) & 0x7FFFFFFF
                value = (x * 37 + y * 23 + c * 71) % (top + 1)
                if state % 7 == 0:
                    value = state % (top + 1)
                row.append(value)
        rows.append(row)
    return rows


# --- PNG ---------------------------------------------------------------------------------------

def png_chunk(kind, data):
    return (struct.pack(">I", len(data)) + kind + data +
            struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))


def pack_row(values, bits):
    if bits == 16:
        return b"".join(struct.pack(">H", v) for v in values)
    if bits == 8:
        return bytes(values)
    out, accumulator, filled = bytearray(), 0, 0
    for v in values:
        accumulator = accumulator << bits | v
        filled += bits
        if filled == 8:
            out.append(accumulator)
            accumulator, filled = 0, 0
    if filled:
        out.append(accumulator << (8 - filled))
    return bytes(out)


ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2),
         (0, 1, 1, 2)]


def png(width, height, colour, bits=8, interlace=False, filter_type=0, extra=b""):
    samples = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[colour]
    value_bits = bits
    image = pixels(width, height, samples, value_bits, seed=width * 31 + colour)
    if colour == 3:
        image = [[v % 5 for v in row] for row in image]
    bytes_per_pixel = max(1, samples * bits // 8)

    def filtered(rows):
        out, previous = bytearray(), None
        for row in rows:
            raw = pack_row(row, bits)
            line = bytearray(raw)
            if filter_type == 1:
                line = bytearray((raw[i] - (raw[i - bytes_per_pixel] if i >= bytes_per_pixel else 0))
                                 & 0xFF for i in range(len(raw)))
            elif filter_type == 2 and previous is not None:
                line = bytearray((raw[i] - previous[i]) & 0xFF for i in range(len(raw)))
            out.append(filter_type if (filter_type != 2 or previous is not None) else 0)
            out += line
            previous = raw
        return out

    if interlace:
        data = bytearray()
        for x0, y0, dx, dy in ADAM7:
            sub = [[row[x * samples:(x + 1) * samples] for x in range(x0, width, dx)]
                   for row in image[y0::dy]]
            sub = [[v for p in row for v in p] for row in sub if row]
            if sub and sub[0]:
                data += filtered(sub)
    else:
        data = filtered(image)
    header = struct.pack(">IIBBBBB", width, height, bits, colour, 0, 0, 1 if interlace else 0)
    body = png_chunk(b"IHDR", header)
    if colour == 3:
        body += png_chunk(b"PLTE", bytes(range(0, 15)))
    body += extra
    compressed = zlib.compress(bytes(data), 9)
    # Two IDAT chunks, so the seeds show that image data may be split.
    half = len(compressed) // 2
    body += png_chunk(b"IDAT", compressed[:half]) + png_chunk(b"IDAT", compressed[half:])
    return b"\x89PNG\r\n\x1a\n" + body + png_chunk(b"IEND", b"")


# --- PGM / PPM ---------------------------------------------------------------------------------

def pnm(width, height, colour, max_value=255, comment=False):
    channels = 3 if colour else 1
    bits = 16 if max_value > 255 else 8
    image = pixels(width, height, channels, bits, seed=width + 7)
    header = b"P6" if colour else b"P5"
    header += b"\n# made by make_corpus.py\n" if comment else b"\n"
    header += b"%d %d\n%d\n" % (width, height, max_value)
    body = b"".join(pack_row([min(v, max_value) for v in row], bits) for row in image)
    return header + body


# --- BMP ---------------------------------------------------------------------------------------

def bmp(width, height, bits, top_down=False, os2=False, bitfields=False):
    if bits <= 8:
        colours = 1 << bits
        palette = b"".join(bytes((i * 255 // (colours - 1), 0x40, 255 - i * 255 // (colours - 1)))
                           + (b"" if os2 else b"\0") for i in range(colours))
        image = [[v % colours for v in row] for row in pixels(width, height, 1, 8)]
    else:
        palette = b""
        image = pixels(width, height, bits // 8, 8)
    row_bytes = (width * bits + 31) // 32 * 4
    rows = []
    for row in image:
        data = pack_row(row, bits) if bits <= 8 else bytes(row)
        rows.append(data + b"\0" * (row_bytes - len(data)))
    if not top_down:
        rows.reverse()
    pixel_data = b"".join(rows)
    if os2:
        info = struct.pack("<IHHHH", 12, width, height, 1, bits)
    else:
        compression = 3 if bitfields else 0
        info = struct.pack("<IiiHHIIiiII", 40, width, -height if top_down else height, 1, bits,
                           compression, len(pixel_data), 2835, 2835, 0, 0)
        if bitfields:
            masks = (0xF800, 0x07E0, 0x001F) if bits == 16 else (0xFF0000, 0xFF00, 0xFF)
            info += struct.pack("<III", *masks)
    offset = 14 + len(info) + len(palette)
    header = b"BM" + struct.pack("<IHHI", offset + len(pixel_data), 0, 0, offset)
    return header + info + palette + pixel_data


# --- Baseline JPEG -----------------------------------------------------------------------------

ZIGZAG = [0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48, 41, 34,
          27, 20, 13, 6, 7, 14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44,
          51, 58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63]


def huffman_code(frequencies):
    """Canonical JPEG Huffman codes (symbol -> (code, length)) and the symbols in code order.

    A pseudo-symbol takes the all-ones code of the longest length, which JPEG forbids."""
    nodes = [(count, [symbol]) for symbol, count in frequencies.items()] + [(0, [256])]
    lengths = {symbol: 0 for symbol in frequencies}
    lengths[256] = 0
    while len(nodes) > 1:
        nodes.sort(key=lambda node: node[0])
        (count_a, a), (count_b, b) = nodes[0], nodes[1]
        for symbol in a + b:
            lengths[symbol] += 1
        nodes = nodes[2:] + [(count_a + count_b, a + b)]
    assert max(lengths.values()) <= 16, "corpus images are small enough for 16-bit codes"
    ordered = sorted(lengths, key=lambda s: (lengths[s], s))
    codes, code, previous = {}, 0, lengths[ordered[0]]
    for symbol in ordered:
        code <<= lengths[symbol] - previous
        previous = lengths[symbol]
        codes[symbol] = (code, lengths[symbol])
        code += 1
    ordered.remove(256)
    return codes, ordered


def magnitude(value):
    size = abs(value).bit_length()
    bits = value if value >= 0 else value + (1 << size) - 1
    return size, bits


def jpeg(width, height, colour, quality_step=4, restart_interval=0):
    """Baseline JPEG, 4:4:4, Huffman tables fitted to the image."""
    channels = 3 if colour else 1
    rgb = pixels(width, height, channels, 8, seed=width * 3 + channels)
    planes = [[[0] * width for _ in range(height)] for _ in range(channels)]
    for y in range(height):
        for x in range(width):
            if colour:
                r, g, b = rgb[y][3 * x:3 * x + 3]
                planes[0][y][x] = 0.299 * r + 0.587 * g + 0.114 * b
                planes[1][y][x] = 128 - 0.168736 * r - 0.331264 * g + 0.5 * b
                planes[2][y][x] = 128 + 0.5 * r - 0.418688 * g - 0.081312 * b
            else:
                planes[0][y][x] = rgb[y][x]
    blocks_x, blocks_y = (width + 7) // 8, (height + 7) // 8
    total = blocks_x * blocks_y

    def block(plane, bx, by):
        samples = [[plane[min(by * 8 + j, height - 1)][min(bx * 8 + i, width - 1)] - 128
                    for i in range(8)] for j in range(8)]
        out = []
        for v in range(8):
            for u in range(8):
                sum_ = sum(samples[j][i] * math.cos((2 * i + 1) * u * math.pi / 16) *
                           math.cos((2 * j + 1) * v * math.pi / 16)
                           for j in range(8) for i in range(8))
                scale = (0.5 if u == 0 else math.sqrt(0.5)) * (0.5 if v == 0 else math.sqrt(0.5))
                out.append(int(round(sum_ * scale / quality_step)))
        return [out[z] for z in ZIGZAG]

    # Per block: the DC difference's size class, then (run << 4 | size) AC symbols, ZRL, EOB.
    units, previous_dc = [], [0] * channels
    for index in range(total):
        if restart_interval and index % restart_interval == 0:
            previous_dc = [0] * channels
        for c in range(channels):
            coefficients = block(planes[c], index % blocks_x, index // blocks_x)
            dc = magnitude(coefficients[0] - previous_dc[c])
            previous_dc[c] = coefficients[0]
            ac, run = [], 0
            for value in coefficients[1:]:
                if value == 0:
                    run += 1
                    continue
                while run > 15:
                    ac.append((0xF0, (0, 0)))
                    run -= 16
                size, bits = magnitude(value)
                ac.append((run << 4 | size, (size, bits)))
                run = 0
            if run:
                ac.append((0x00, (0, 0)))
            units.append((index, c, dc, ac))

    dc_counts, ac_counts = {}, {}
    for _, _, dc, ac in units:
        dc_counts[dc[0]] = dc_counts.get(dc[0], 0) + 1
        for symbol, _ in ac:
            ac_counts[symbol] = ac_counts.get(symbol, 0) + 1
    dc_codes, dc_order = huffman_code(dc_counts)
    ac_codes, ac_order = huffman_code(ac_counts)

    def dht(table_class, codes, order):
        counts = [0] * 16
        for symbol in order:
            counts[codes[symbol][1] - 1] += 1
        body = bytes([table_class << 4]) + bytes(counts) + bytes(order)
        return b"\xFF\xC4" + struct.pack(">H", len(body) + 2) + body

    entropy = bytearray()
    pending = [0, 0]  # bits, count

    def put(value, length):
        for shift in range(length - 1, -1, -1):
            pending[0] = pending[0] << 1 | (value >> shift & 1)
            pending[1] += 1
            if pending[1] == 8:
                entropy.append(pending[0])
                if pending[0] == 0xFF:
                    entropy.append(0)  # byte stuffing
                pending[:] = [0, 0]

    def flush():
        if pending[1]:
            put((1 << (8 - pending[1])) - 1, 8 - pending[1])

    restarts = 0
    for index, c, (dc_size, dc_bits), ac in units:
        put(*dc_codes[dc_size])
        put(dc_bits, dc_size)
        for symbol, (size, bits) in ac:
            put(*ac_codes[symbol])
            put(bits, size)
        if (restart_interval and c == channels - 1 and (index + 1) % restart_interval == 0 and
                index + 1 < total):
            flush()
            entropy.extend(bytes([0xFF, 0xD0 + restarts % 8]))
            restarts += 1
    flush()

    quant = b"\xFF\xDB" + struct.pack(">HB", 67, 0) + bytes([quality_step] * 64)
    frame = struct.pack(">BHHB", 8, height, width, channels)
    for c in range(channels):
        frame += bytes([c + 1, 0x11, 0])
    sof = b"\xFF\xC0" + struct.pack(">H", len(frame) + 2) + frame
    scan = bytes([channels])
    for c in range(channels):
        scan += bytes([c + 1, 0x00])
    scan += bytes([0, 63, 0])
    sos = b"\xFF\xDA" + struct.pack(">H", len(scan) + 2) + scan
    dri = b"\xFF\xDD" + struct.pack(">HH", 4, restart_interval) if restart_interval else b""
    return (b"\xFF\xD8" + quant + sof + dht(0, dc_codes, dc_order) + dht(1, ac_codes, ac_order) +
            dri + sos + bytes(entropy) + b"\xFF\xD9")


# --- Descriptor files ----------------------------------------------------------------------------

def descriptor_rows(count):
    return [[(r * 131 + i * 17) % 256 for i in range(128)] for r in range(count)]


def npy(count, dtype):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%d, 128), }" % (dtype, count)
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    body = b"".join(bytes(row) if dtype == "|u1" else struct.pack("<128f", *row)
                    for row in descriptor_rows(count))
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + body


def key_file(count):
    lines = ["%d 128" % count]
    for r, row in enumerate(descriptor_rows(count)):
        lines.append("%.2f %.2f %.2f %.3f" % (10 + r, 20.5 + r, 1.5, 0.25))
        for start in range(0, 128, 20):
            lines.append(" " + " ".join(str(v) for v in row[start:start + 20]))
    return ("\n".join(lines) + "\n").encode()


def csv_file(count, header):
    lines = [",".join("v%d" % i for i in range(128))] if header else []
    lines += [",".join(str(v) for v in row) for row in descriptor_rows(count)]
    return ("\n".join(lines) + "\n").encode()


# --- Mask files ----------------------------------------------------------------------------------

def mask_text(n, seed, separator=" ", newline="\n", comment=None, bom=False):
    """An n x n mask of varied numerals: integers, decimals, exponents, signs."""
    forms = ["%d", "%.3f", "%.2e", "%+.1f", "%g"]
    lines = ["# " + comment] if comment else []
    state = seed
    for y in range(n):
        row = []
        for x in range(n):
            state = (state * 1103515245 + 12345) & 0x7FFFFFFF
            value = ((state >> 8) % 2001 - 1000) / 250.0
            row.append(forms[(x + y + seed) % len(forms)] % value)
        lines.append(separator.join(row))
    text = newline.join(lines) + newline
    return (b"\xef\xbb\xbf" if bom else b"") + text.encode()


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "corpus")
    images = {
        "gray-8.png": png(5, 4, 0),
        "gray-1.png": png(13, 3, 0, bits=1),
        "gray-4-sub.png": png(7, 5, 0, bits=4, filter_type=1),
        "gray-16.png": png(3, 3, 0, bits=16),
        "gray-alpha.png": png(4, 3, 4),
        "rgb-up.png": png(6, 4, 2, filter_type=2),
        "rgb-16-interlaced.png": png(9, 9, 2, bits=16, interlace=True),
        "rgba-interlaced.png": png(10, 7, 6, interlace=True),
        "palette-2.png": png(9, 4, 3, bits=2),
        "palette-trns.png": png(5, 5, 3, extra=png_chunk(b"tRNS", bytes([0, 128, 255, 255, 64]))),
        "gray.pgm": pnm(6, 5, False),
        "gray-16-comment.pgm": pnm(4, 3, False, max_value=1000, comment=True),
        "rgb.ppm": pnm(5, 3, True),
        "rgb-16.ppm": pnm(3, 2, True, max_value=65535),
        "rgb-24.bmp": bmp(5, 3, 24),
        "rgba-32-top-down.bmp": bmp(4, 3, 32, top_down=True),
        "rgb-16-bitfields.bmp": bmp(5, 2, 16, bitfields=True),
        "palette-8.bmp": bmp(6, 4, 8),
        "palette-1.bmp": bmp(11, 3, 1),
        "palette-4-os2.bmp": bmp(5, 3, 4, os2=True),
        "gray.jpg": jpeg(16, 8, False),
        "rgb.jpg": jpeg(11, 9, True),
        "rgb-restarts.jpg": jpeg(24, 8, True, restart_interval=1),
    }
    descriptors = {
        # The first byte picks the file's extension in fuzz_descriptor_reader: 0 .npy, 1 .key,
        # 2 .csv.
        "u8.npy": b"\x00" + npy(2, "|u1"),
        "f32.npy": b"\x00" + npy(1, "<f4"),
        "three.key": b"\x01" + key_file(3),
        "two.csv": b"\x02" + csv_file(2, False),
        "header.csv": b"\x02" + csv_file(1, True),
    }
    masks = {
        "identity.txt": b"0 0 0\n0 1 0\n0 0 0\n",
        "one.txt": b"1\n",
        "sharpen-commas.txt": b"0, -1, 0\n-1, 5, -1\n0, -1, 0\n",
        "semicolons.txt": mask_text(3, 2, separator="; "),
        "comments.txt": b"# a box blur\n" + b"".join(b"1 1 1 1 1  # row %d\n" % i for i in range(5)),
        "crlf-bom.txt": mask_text(5, 3, newline="\r\n", bom=True),
        "tabs.txt": mask_text(7, 4, separator="\t"),
        "exponents.txt": b"1e-3 -2.5E+1 .5\n+4 0x1p-2 -0\n1e2 6. 7.25e0\n",
        "one-line.txt": b" ".join(b"%d" % (i % 7 - 3) for i in range(81)) + b"\n",
        "no-final-newline.txt": mask_text(3, 5).rstrip(b"\n"),
        "largest.txt": mask_text(63, 6),
        "even.txt": b"1 2\n3 4\n",
    }
    for folder, files in (("image_reader", images), ("descriptor_reader", descriptors),
                          ("mask_reader", masks)):
        directory = os.path.join(out, folder)
        os.makedirs(directory, exist_ok=True)
        for name in os.listdir(directory):
            if not name.startswith(("crash-", "finding-")):
                os.remove(os.path.join(directory, name))
        for name, data in files.items():
            with open(os.path.join(directory, name), "wb") as f:
                f.write(data)
    print("wrote %d image, %d descriptor and %d mask seeds under %s" %
          (len(images), len(descriptors), len(masks), out))


if __name__ == "__main__":
    main()
