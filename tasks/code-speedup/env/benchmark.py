"""Check compute.py on the example input and estimate its speed-up over the original.

Usage: python benchmark.py [path/to/compute.py]

Loads example_input.json, runs compute() and compares the result with example_output.json
(tolerance 1e-5), then times compute() and the original implementation (best of 5 runs each)
and prints the speed-up. The grader does the same on private inputs of the same size.
"""

import gc
import importlib.util
import json
import math
import sys
import time

REPEATS = 3


def original_compute(data):
    """The original compute() of compute.py, kept here to measure the speed-up."""
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


def load_compute(path):
    spec = importlib.util.spec_from_file_location("compute", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.compute


def best_time(fn, data):
    best = math.inf
    for _ in range(REPEATS):
        gc.collect()
        gc.disable()
        start = time.perf_counter()
        fn(data)
        best = min(best, time.perf_counter() - start)
        gc.enable()
    return best


def max_error(got, want):
    """Largest |got - want| over nested lists; raises if the shapes differ."""
    if isinstance(want, list):
        got = list(got)
        if len(got) != len(want):
            raise ValueError(f"length {len(got)} where {len(want)} was expected")
        return max((max_error(g, w) for g, w in zip(got, want, strict=True)), default=0.0)
    return abs(float(got) - want) / (1e-5 + 1e-5 * abs(want))  # > 1 means out of tolerance


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "compute.py"
    compute = load_compute(path)
    with open("example_input.json") as f:
        data = json.load(f)
    with open("example_output.json") as f:
        want = json.load(f)
    got = compute(data)
    if hasattr(got, "tolist"):
        got = got.tolist()
    err = max_error(got, want)
    print("output:", "OK" if err <= 1 else "WRONG (outside the tolerance)")
    t_new = best_time(compute, data)
    t_old = best_time(original_compute, data)
    print(f"original: {t_old * 1000:.2f} ms, compute.py: {t_new * 1000:.2f} ms (best of {REPEATS})")
    print(f"speed-up: {t_old / t_new:.2f}x")
    if err > 1:
        sys.exit(1)


if __name__ == "__main__":
    main()
