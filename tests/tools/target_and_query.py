"""Writes target.pgm, a 64x48 gray pattern, and query.pgm, the 16x12 piece of it at row 20,
column 30, into the current folder: the tool tests' known answer."""
w, h = 64, 48
pixels = [[(x * 7 + y * 13 + (x * y) % 17) % 256 for x in range(w)] for y in range(h)]
with open("target.pgm", "wb") as f:
    f.write(b"P5\n%d %d\n255\n" % (w, h) + bytes(v for row in pixels for v in row))
with open("query.pgm", "wb") as f:
    f.write(b"P5\n16 12\n255\n" + bytes(pixels[20 + j][30 + i] for j in range(12) for i in range(16)))
