"""Reference (silver): numpy inside the pixel loop (one dot product per output pixel)."""

from pathlib import Path

SOURCE = r'''import numpy as np


def compute(data):
    """numpy inside the loops: one dot product per output pixel instead of 27*F scalar ops."""
    image = np.asarray(data["image"], dtype=np.float64)
    kernels = np.asarray(data["kernels"], dtype=np.float64)
    bias = np.asarray(data["bias"], dtype=np.float64)
    H, W, C = image.shape
    F, K = kernels.shape[:2]
    out_h, out_w = H - K + 1, W - K + 1
    kmat = kernels.reshape(F, -1).T  # (K*K*C, F)
    conv = np.empty((out_h, out_w, F))
    for i in range(out_h):
        for j in range(out_w):
            conv[i, j] = image[i:i + K, j:j + K].reshape(-1) @ kmat
    conv += bias
    np.maximum(conv, 0.0, out=conv)
    ph, pw = out_h // 2, out_w // 2
    pooled = np.empty((ph, pw, F))
    for i in range(ph):
        for j in range(pw):
            pooled[i, j] = conv[2 * i:2 * i + 2, 2 * j:2 * j + 2].reshape(4, F).max(axis=0)
    return pooled
'''

Path("compute.py").write_text(SOURCE)
