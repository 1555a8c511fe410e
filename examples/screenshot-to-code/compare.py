"""Compare two screenshots: pixel difference and a structural similarity score (scikit-image SSIM, greyscale)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from PIL import Image


def load(path: Path, size: tuple[int, int]) -> np.ndarray:
    return np.asarray(Image.open(path).convert("RGB").resize(size), dtype=np.float64)


def ssim(a: np.ndarray, b: np.ndarray) -> float:
    """Structural similarity of the greyscale images (scikit-image's SSIM: 7x7 Gaussian-free windows, the
    usual constants for 8-bit data); 1.0 is identical."""
    from skimage.metrics import structural_similarity

    return float(structural_similarity(a.mean(axis=2), b.mean(axis=2), data_range=255.0))


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
