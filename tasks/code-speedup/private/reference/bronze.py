"""Reference (bronze): numpy per output pixel and filter, one dot product of the flat patch with
the filter (4.2x on this 2-core VM, against the 2.5 threshold)."""

from pathlib import Path

SOURCE = r'''import numpy as np


def compute(data):
    """numpy per output pixel and filter: one dot product of the flat patch with each filter."""
    image = np.asarray(data["image"], dtype=np.float64)
    kernels = np.asarray(data["kernels"], dtype=np.float64)
    bias = data["bias"]
    H, W, C = image.shape
    F, K = kernels.shape[:2]
    out_h, out_w = H - K + 1, W - K + 1
    flat_k = list(kernels.reshape(F, -1))
    conv = np.empty((out_h, out_w, F))
    for i in range(out_h):
        for j in range(out_w):
            patch = image[i:i + K, j:j + K].ravel()
            for f in range(F):
                conv[i, j, f] = max(patch.dot(flat_k[f]) + bias[f], 0.0)
    ph, pw = out_h // 2, out_w // 2
    return conv[:2 * ph, :2 * pw].reshape(ph, 2, pw, 2, F).max(axis=(1, 3))
'''

Path("compute.py").write_text(SOURCE)
