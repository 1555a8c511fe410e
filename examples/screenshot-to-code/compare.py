"""Compare two screenshots: pixel difference and a structural similarity score (SSIM of the greyscale).

The SSIM is kimi's own (kimi_cli.media.similarity, numpy only: the figure `--visual-check` scores by), so
this script needs the Python kimi is installed in and nothing more: numpy and Pillow come with kimi."""

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
    """Structural similarity of the greyscale images (7x7 uniform windows, the usual constants for 8-bit
    data, as scikit-image computes it by default); 1.0 is identical."""
    try:
        from kimi_cli.media.similarity import ssim as kimi_ssim
    except ImportError:
        sys.exit(
            "compare.py uses kimi's SSIM: run it with the Python kimi is installed in (pip install kimi-cli-agent)"
        )
    return kimi_ssim(a.mean(axis=2), b.mean(axis=2))


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
