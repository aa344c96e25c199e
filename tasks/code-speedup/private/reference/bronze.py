"""Reference (bronze): pure Python, each output value is one C-level sum over a flattened patch."""

from pathlib import Path

SOURCE = r'''from operator import mul


def compute(data):
    """Pure Python, but each output value is one C-level sum(map(mul, ...)) over a flat patch."""
    image = data["image"]
    kernels = data["kernels"]
    bias = data["bias"]
    H, W, C = len(image), len(image[0]), len(image[0][0])
    F, K = len(kernels), len(kernels[0])
    out_h, out_w = H - K + 1, W - K + 1
    flat_k = [[x for row in kf for px in row for x in px] for kf in kernels]
    # each image row flattened once: flat_row[j*C:(j+K)*C] is the K-pixel window at column j
    flat_rows = [[x for px in row for x in px] for row in image]
    KC = K * C
    conv = []
    for i in range(out_h):
        rows = flat_rows[i:i + K]
        line = []
        for j in range(out_w):
            lo = j * C
            patch = [x for r in rows for x in r[lo:lo + KC]]
            sums = [sum(map(mul, patch, kf)) for kf in flat_k]
            line.append([s + b if s + b > 0.0 else 0.0 for s, b in zip(sums, bias)])
        conv.append(line)
    ph, pw = out_h // 2, out_w // 2
    pooled = []
    for i in range(ph):
        r0, r1 = conv[2 * i], conv[2 * i + 1]
        pooled.append([list(map(max, r0[2 * j], r0[2 * j + 1], r1[2 * j], r1[2 * j + 1]))
                       for j in range(pw)])
    return pooled
'''

Path("compute.py").write_text(SOURCE)
