"""Compare two screenshots: pixel difference and a structural similarity score (SSIM on greyscale blocks)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from PIL import Image


def load(path: Path, size: tuple[int, int]) -> np.ndarray:
    return np.asarray(Image.open(path).convert("RGB").resize(size), dtype=np.float64)


def ssim(a: np.ndarray, b: np.ndarray, block: int = 8) -> float:
    """Mean SSIM over non-overlapping blocks of the greyscale images (the usual constants for 8-bit data)."""
    ga, gb = a.mean(axis=2), b.mean(axis=2)
    h, w = (ga.shape[0] // block) * block, (ga.shape[1] // block) * block
    ga = ga[:h, :w].reshape(h // block, block, w // block, block).swapaxes(1, 2)
    gb = gb[:h, :w].reshape(h // block, block, w // block, block).swapaxes(1, 2)
    ma, mb = ga.mean(axis=(2, 3)), gb.mean(axis=(2, 3))
    va, vb = ga.var(axis=(2, 3)), gb.var(axis=(2, 3))
    cov = ((ga - ma[..., None, None]) * (gb - mb[..., None, None])).mean(axis=(2, 3))
    c1, c2 = (0.01 * 255) ** 2, (0.03 * 255) ** 2
    score = ((2 * ma * mb + c1) * (2 * cov + c2)) / ((ma**2 + mb**2 + c1) * (va + vb + c2))
    return float(score.mean())


def compare(reference: Path, candidate: Path) -> dict[str, float]:
    size = Image.open(reference).size
    a, b = load(reference, size), load(candidate, size)
    diff = np.abs(a - b)
    return {
        "ssim": round(ssim(a, b), 4),
        "mean_abs_diff": round(float(diff.mean()), 3),  # 0..255
        "pixels_changed": round(float((diff.max(axis=2) > 16).mean()), 4),  # share of pixels off by > 16
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("reference", type=Path)
    parser.add_argument("candidate", type=Path)
    parser.add_argument("--min-ssim", type=float, default=0.9, help="exit 1 below this similarity")
    args = parser.parse_args()
    scores = compare(args.reference, args.candidate)
    print(json.dumps(scores))
    sys.exit(0 if scores["ssim"] >= args.min_ssim else 1)
