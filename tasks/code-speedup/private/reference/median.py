"""Reference (median): the same loops, with the window's pixels and each filter's taps looked up
once instead of in the innermost loop."""

from pathlib import Path

SOURCE = r'''def compute(data):
    """Same loops, but the window's pixels and each filter's taps are looked up once."""
    image = data["image"]
    kernels = data["kernels"]
    bias = data["bias"]
    H, W, C = len(image), len(image[0]), len(image[0][0])
    F, K = len(kernels), len(kernels[0])
    out_h, out_w = H - K + 1, W - K + 1
    taps = [[kf[di][dj] for di in range(K) for dj in range(K)] for kf in kernels]  # F x K*K x C
    conv = []
    for i in range(out_h):
        rows = image[i:i + K]
        line = []
        for j in range(out_w):
            window = [row[j + dj] for row in rows for dj in range(K)]  # K*K pixels
            out = []
            for f in range(F):
                s = bias[f]
                tf = taps[f]
                for t in range(K * K):
                    px = window[t]
                    kv = tf[t]
                    for c in range(C):
                        s += px[c] * kv[c]
                out.append(s if s > 0.0 else 0.0)
            line.append(out)
        conv.append(line)
    ph, pw = out_h // 2, out_w // 2
    pooled = []
    for i in range(ph):
        r0, r1 = conv[2 * i], conv[2 * i + 1]
        pooled.append(
            [
                list(map(max, r0[2 * j], r0[2 * j + 1], r1[2 * j], r1[2 * j + 1]))
                for j in range(pw)
            ]
        )
    return pooled
'''

Path("compute.py").write_text(SOURCE)
