"""How alike two pictures are: SSIM of their greyscale (the mean of R, G and B), in numpy alone.

The figure is the usual structural similarity (Wang et al., 2004) as scikit-image computes it by default:
7x7 windows of uniform weight, sample variances (divided by n - 1), K1 = 0.01, K2 = 0.03 for 8-bit data, the
mean over the windows that lie wholly inside the picture. 1.0 is identical. numpy is a dependency of kimi;
scikit-image is not (a test checks this against it where it is installed).

Both pictures reach here through the image pipeline (kimi_cli.media.pipeline.prepare), so their headers
were read and their size bounded before Pillow decodes them; the candidate is scaled to the reference.
"""

from __future__ import annotations

import io
from typing import Any

WINDOW = 7
K1, K2 = 0.01, 0.03
DATA_RANGE = 255.0


def greyscale(data: bytes, size: tuple[int, int] | None = None) -> Any:
    """A picture's greyscale as float64 (mean of R, G, B), scaled to `size` (width, height) when given."""
    import numpy as np
    from PIL import Image

    with Image.open(io.BytesIO(data)) as img:
        rgb = img.convert("RGB")
        if size is not None and rgb.size != size:
            rgb = rgb.resize(size, Image.Resampling.BILINEAR)
        return np.asarray(rgb, dtype=np.float64).mean(axis=2)


def _window_sums(a: Any, win: int) -> Any:
    """The sum over every win x win window wholly inside `a` (an integral image: O(pixels))."""
    import numpy as np

    padded = np.zeros((a.shape[0] + 1, a.shape[1] + 1))
    padded[1:, 1:] = a.cumsum(axis=0).cumsum(axis=1)
    return padded[win:, win:] - padded[:-win, win:] - padded[win:, :-win] + padded[:-win, :-win]


def ssim(a: Any, b: Any, win: int = WINDOW, data_range: float = DATA_RANGE) -> float:
    """SSIM of two greyscale arrays of one shape; ValueError when they differ or are under one window."""
    if a.shape != b.shape:
        raise ValueError(f"the pictures differ in size: {a.shape} and {b.shape}")
    if min(a.shape) < win:
        raise ValueError(f"a picture under {win}x{win} pixels has no window to compare")
    n = win * win
    mean_a, mean_b = _window_sums(a, win) / n, _window_sums(b, win) / n
    norm = n / (n - 1)  # sample (co)variances
    var_a = norm * (_window_sums(a * a, win) / n - mean_a * mean_a)
    var_b = norm * (_window_sums(b * b, win) / n - mean_b * mean_b)
    cov = norm * (_window_sums(a * b, win) / n - mean_a * mean_b)
    c1, c2 = (K1 * data_range) ** 2, (K2 * data_range) ** 2
    top = (2 * mean_a * mean_b + c1) * (2 * cov + c2)
    bottom = (mean_a * mean_a + mean_b * mean_b + c1) * (var_a + var_b + c2)
    return float((top / bottom).mean())


def similarity(reference: bytes, candidate: bytes) -> float:
    """SSIM of `candidate` against `reference` (both encoded pictures), at the reference's size."""
    ref = greyscale(reference)
    height, width = ref.shape
    return ssim(ref, greyscale(candidate, (width, height)))
