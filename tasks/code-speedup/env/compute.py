"""A small convolutional layer in pure Python: make compute() faster, keep its output.

compute(data) takes
    data["image"]    H x W x C nested lists of floats (an image with C channels)
    data["kernels"]  F x K x K x C nested lists of floats (F filters of size K x K)
    data["bias"]     F floats
and returns the layer's output as a (H-K+1)//2 x (W-K+1)//2 x F nested list (or numpy array):
a 'valid' cross-correlation with stride 1 plus bias, then ReLU, then 2 x 2 max-pooling with
stride 2 (an odd last row or column is dropped).

Run `python benchmark.py` to check the output on the example input and time it.
"""


def compute(data):
    image = data["image"]
    kernels = data["kernels"]
    bias = data["bias"]
    H, W, C = len(image), len(image[0]), len(image[0][0])
    F, K = len(kernels), len(kernels[0])
    out_h, out_w = H - K + 1, W - K + 1

    # convolution + bias + ReLU
    conv = [[[0.0] * F for _ in range(out_w)] for _ in range(out_h)]
    for i in range(out_h):
        for j in range(out_w):
            for f in range(F):
                s = bias[f]
                for di in range(K):
                    for dj in range(K):
                        for c in range(C):
                            s += image[i + di][j + dj][c] * kernels[f][di][dj][c]
                conv[i][j][f] = s if s > 0.0 else 0.0

    # 2 x 2 max-pooling, stride 2
    ph, pw = out_h // 2, out_w // 2
    pooled = [[[0.0] * F for _ in range(pw)] for _ in range(ph)]
    for i in range(ph):
        for j in range(pw):
            for f in range(F):
                pooled[i][j][f] = max(
                    conv[2 * i][2 * j][f],
                    conv[2 * i][2 * j + 1][f],
                    conv[2 * i + 1][2 * j][f],
                    conv[2 * i + 1][2 * j + 1][f],
                )
    return pooled
