"""Reference (median): the same loops over a flat window and flat filter taps, paired by zip
instead of indexed (2.5x on this 2-core VM, against the 1.2 threshold)."""

from pathlib import Path

SOURCE = r'''def compute(data):
    """Same loops over flat windows and flat filter taps: one zip, no indexing."""
    image = data["image"]
    kernels = data["kernels"]
    bias = data["bias"]
    H, W = len(image), len(image[0])
    F, K = len(kernels), len(kernels[0])
    out_h, out_w = H - K + 1, W - K + 1
    taps = [[x for row in kf for px in row for x in px] for kf in kernels]  # F x K*K*C
    conv = []
    for i in range(out_h):
        rows = image[i:i + K]
        line = []
        for j in range(out_w):
            window = [x for row in rows for px in row[j:j + K] for x in px]
            out = []
            for f in range(F):
                s = bias[f]
                for a, b in zip(window, taps[f]):
                    s += a * b
                out.append(s if s > 0.0 else 0.0)
            line.append(out)
        conv.append(line)
    ph, pw = out_h // 2, out_w // 2
    pooled = []
    for i in range(ph):
        r0, r1 = conv[2 * i], conv[2 * i + 1]
        pooled.append(
            [list(map(max, r0[2 * j], r0[2 * j + 1], r1[2 * j], r1[2 * j + 1])) for j in range(pw)]
        )
    return pooled
'''

Path("compute.py").write_text(SOURCE)
