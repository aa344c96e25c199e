"""Prepare the noisy-shapes task: seeded 16x16 grayscale images of simple shapes, degraded by
blur, noise, contrast changes and a background gradient of varying strength.

python prepare.py --public DIR --private DIR --seed N
"""

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

SIZE = 16
SS = 4  # supersampling factor for anti-aliased drawing
CLASSES = ["circle", "ring", "square", "triangle", "cross", "bar"]
N_TRAIN = 800
N_TEST = 700


def draw(shape, rng):
    """One anti-aliased 16x16 mask in [0, 1] of the given shape, random pose."""
    n = SIZE * SS
    c = (np.arange(n) + 0.5) / SS  # pixel-centre coordinates in image units
    yy, xx = np.meshgrid(c, c, indexing="ij")
    r = rng.uniform(3.5, 6.0)
    cx, cy = rng.uniform(r + 0.5, SIZE - r - 0.5, size=2)
    theta = rng.uniform(0, 2 * np.pi)
    dx, dy = xx - cx, yy - cy
    u = dx * np.cos(theta) + dy * np.sin(theta)
    v = -dx * np.sin(theta) + dy * np.cos(theta)
    if shape == "circle":
        m = u**2 + v**2 <= r**2
    elif shape == "ring":
        d = np.sqrt(u**2 + v**2)
        w = rng.uniform(1.2, 2.0)
        m = (d <= r) & (d >= r - w)
    elif shape == "square":
        h = r / np.sqrt(2) * 1.15
        m = (np.abs(u) <= h) & (np.abs(v) <= h)
    elif shape == "triangle":
        # equilateral triangle with circumradius r: three half-planes
        m = np.ones_like(u, dtype=bool)
        for k in range(3):
            a = theta + 2 * np.pi * k / 3
            m &= dx * np.cos(a) + dy * np.sin(a) <= r / 2
    elif shape == "cross":
        w = rng.uniform(0.9, 1.5)
        m = ((np.abs(u) <= w) & (np.abs(v) <= r)) | ((np.abs(v) <= w) & (np.abs(u) <= r))
    elif shape == "bar":
        w = rng.uniform(1.0, 1.8)
        m = (np.abs(u) <= r) & (np.abs(v) <= w)
    else:
        raise ValueError(shape)
    return m.reshape(SIZE, SS, SIZE, SS).mean(axis=(1, 3))


def blur_batch(imgs, sigmas):
    """Gaussian-blur each image in imgs (N,16,16) with its own sigma (0 = no blur)."""
    radius = 4
    taps = np.arange(-radius, radius + 1)
    s = np.maximum(sigmas, 1e-3)[:, None]
    k = np.exp(-0.5 * (taps[None, :] / s) ** 2)
    k /= k.sum(axis=1, keepdims=True)
    k = k[:, :, None, None]
    p = np.pad(imgs, ((0, 0), (radius, radius), (radius, radius)), mode="edge")
    rows = sum(k[:, i] * p[:, i : i + SIZE, :] for i in range(len(taps)))
    return sum(k[:, i] * rows[:, :, i : i + SIZE] for i in range(len(taps)))


def render_all(labels, rng):
    n = len(labels)
    imgs = np.empty((n, SIZE, SIZE))
    lin = (np.arange(SIZE) - SIZE / 2) / SIZE
    for i, label in enumerate(labels):
        mask = draw(CLASSES[label], rng)
        fg = rng.uniform(0.6, 1.0)
        bg = rng.uniform(0.0, 0.3)
        g = rng.uniform(-0.25, 0.25, size=2)  # background gradient
        imgs[i] = bg + (fg - bg) * mask + g[0] * lin[None, :] + g[1] * lin[:, None]
    imgs = blur_batch(imgs, rng.uniform(0.0, 1.3, size=n))
    # the noise level varies strongly from image to image
    noise = rng.choice([0.02, 0.05, 0.1, 0.15, 0.25], size=n)
    imgs = imgs + rng.normal(0.0, 1.0, size=imgs.shape) * noise[:, None, None]
    # a few salt-and-pepper pixels
    flat = imgs.reshape(n, -1)
    for i in range(n):
        n_sp = rng.randint(0, 8)
        idx = rng.randint(0, SIZE * SIZE, size=n_sp)
        flat[i, idx] = rng.randint(0, 2, size=n_sp).astype(float)
    return np.clip(np.round(flat * 255), 0, 255).astype(np.int64)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--public", required=True, type=Path)
    parser.add_argument("--private", required=True, type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    args.public.mkdir(parents=True, exist_ok=True)
    args.private.mkdir(parents=True, exist_ok=True)

    rng = np.random.RandomState(args.seed)
    n = N_TRAIN + N_TEST
    labels = rng.randint(0, len(CLASSES), size=n)
    pixels = render_all(labels, rng)

    df = pd.DataFrame(pixels, columns=[f"p{i}" for i in range(SIZE * SIZE)])
    df.insert(0, "label", labels)
    df.insert(0, "id", np.arange(n))
    train = df.iloc[:N_TRAIN].reset_index(drop=True)
    test = df.iloc[N_TRAIN:].reset_index(drop=True)
    n_val = len(test) // 2

    train.to_csv(args.public / "train.csv", index=False)
    test.drop(columns=["label"]).to_csv(args.public / "test.csv", index=False)
    # A valid but useless submission: everything is a circle.
    pd.DataFrame({"id": test["id"], "label": 0}).to_csv(
        args.public / "sample_submission.csv", index=False
    )
    test[["id", "label"]].iloc[:n_val].to_csv(args.private / "validate.csv", index=False)
    test[["id", "label"]].iloc[n_val:].to_csv(args.private / "test.csv", index=False)


if __name__ == "__main__":
    main()
