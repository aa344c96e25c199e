"""Prepare the code-speedup task: an example input/output and the private benchmark inputs.

python prepare.py --public DIR --private DIR --seed N

Public: example_input.json (one input of the graded size) and example_output.json (what the
original compute() returns for it).
Private: validate.json and test.json: the size of the graded inputs. Their seeds are not used:
the grader draws every timed input afresh, from the operating system's randomness, since seeds
that follow from the session seed could be rebuilt by the submission.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

SHAPE = {"H": 48, "W": 48, "C": 3, "F": 12, "K": 3}
REPEATS = 6  # timed inputs per split


def make_input(seed: int, H: int, W: int, C: int, F: int, K: int) -> dict:
    """The same generator as the grader's."""
    rng = random.Random(seed)
    image = [[[rng.uniform(-1, 1) for _ in range(C)] for _ in range(W)] for _ in range(H)]
    kernels = [
        [[[rng.gauss(0, 0.3) for _ in range(C)] for _ in range(K)] for _ in range(K)]
        for _ in range(F)
    ]
    bias = [rng.uniform(-0.1, 0.1) for _ in range(F)]
    return {"image": image, "kernels": kernels, "bias": bias}


def reference_compute(data: dict) -> list:
    """The original (slow) compute() of env/compute.py, condensed."""
    image, kernels, bias = data["image"], data["kernels"], data["bias"]
    H, W, C = len(image), len(image[0]), len(image[0][0])
    F, K = len(kernels), len(kernels[0])
    out_h, out_w = H - K + 1, W - K + 1
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
    return [
        [
            [
                max(
                    conv[2 * i][2 * j][f],
                    conv[2 * i][2 * j + 1][f],
                    conv[2 * i + 1][2 * j][f],
                    conv[2 * i + 1][2 * j + 1][f],
                )
                for f in range(F)
            ]
            for j in range(out_w // 2)
        ]
        for i in range(out_h // 2)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--public", required=True, type=Path)
    parser.add_argument("--private", required=True, type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    args.public.mkdir(parents=True, exist_ok=True)
    args.private.mkdir(parents=True, exist_ok=True)

    rng = random.Random(args.seed)
    example_seed = rng.randrange(2**31)
    for split in ("validate", "test"):
        seeds = [rng.randrange(2**31) for _ in range(REPEATS)]
        spec = {"shape": SHAPE, "seeds": seeds}
        text = json.dumps(spec, indent=1, sort_keys=True) + "\n"
        (args.private / f"{split}.json").write_text(text)

    example = make_input(example_seed, **SHAPE)
    (args.public / "example_input.json").write_text(json.dumps(example) + "\n")
    (args.public / "example_output.json").write_text(json.dumps(reference_compute(example)) + "\n")


if __name__ == "__main__":
    main()
