"""Independent NumPy references for the layout tests, written from the spec (layouts.md), not from the codec.

`loops_*` place every element by an explicit loop over its plain index, with the spec's index formula written out.
`recipe_*` are the spec's reshape/transpose recipes (decode) and their inverses built with np.pad (encode).
"""

from __future__ import annotations

from math import lcm

import numpy as np


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


# ---- explicit loops over the plain index (the spec's formulas) -------------------------------------------------


def loops_nc1hwc0(x: np.ndarray, c0: int) -> np.ndarray:
    n_, c_, h_, w_ = x.shape
    out = np.zeros((n_, cdiv(c_, c0), h_, w_, c0), x.dtype)
    for n, c, h, w in np.ndindex(*x.shape):
        out[n, c // c0, h, w, c % c0] = x[n, c, h, w]
    return out


def loops_ndc1hwc0(x: np.ndarray, c0: int) -> np.ndarray:  # x is NCDHW
    n_, c_, d_, h_, w_ = x.shape
    out = np.zeros((n_, d_, cdiv(c_, c0), h_, w_, c0), x.dtype)
    for n, c, d, h, w in np.ndindex(*x.shape):
        out[n, d, c // c0, h, w, c % c0] = x[n, c, d, h, w]
    return out


def loops_fractal_z(x: np.ndarray, c0: int) -> np.ndarray:  # x is NCHW
    n_, c_, h_, w_ = x.shape
    out = np.zeros((cdiv(c_, c0) * h_ * w_, cdiv(n_, 16), 16, c0), x.dtype)
    for n, c, h, w in np.ndindex(*x.shape):
        out[(c // c0) * h_ * w_ + h * w_ + w, n // 16, n % 16, c % c0] = x[n, c, h, w]
    return out


def grouped_numbers(n: int, cin: int, groups: int, c0: int) -> dict[str, int]:
    cout_g = n // groups
    e = min(lcm(lcm(cin, c0) // cin, lcm(cout_g, 16) // cout_g), groups)
    cin_opt = cdiv(e * cin, c0) * c0
    return {"e": e, "cout_g": cout_g, "c1": cin_opt // c0, "gp": cdiv(groups, e), "n1": cdiv(e * cout_g, 16)}


def loops_fractal_z_grouped(x: np.ndarray, groups: int, c0: int) -> np.ndarray:  # x is (N, Cin, H, W)
    n_, cin, h_, w_ = x.shape
    g = grouped_numbers(n_, cin, groups, c0)
    e, cout_g, c1 = g["e"], g["cout_g"], g["c1"]
    out = np.zeros((g["gp"] * c1 * h_ * w_, g["n1"], 16, c0), x.dtype)
    for n, ci, h, w in np.ndindex(*x.shape):
        grp, co = n // cout_g, n % cout_g
        pc = (grp % e) * cin + ci  # packed input channel
        pr = (grp % e) * cout_g + co  # packed output row
        row = (grp // e) * c1 * h_ * w_ + (pc // c0) * h_ * w_ + h * w_ + w
        out[row, pr // 16, pr % 16, pc % c0] = x[n, ci, h, w]
    return out


def loops_fractal_z_3d(x: np.ndarray, c0: int) -> np.ndarray:  # x is NCDHW
    n_, c_, d_, h_, w_ = x.shape
    c1 = cdiv(c_, c0)
    out = np.zeros((d_ * c1 * h_ * w_, cdiv(n_, 16), 16, c0), x.dtype)
    for n, c, d, h, w in np.ndindex(*x.shape):
        out[d * c1 * h_ * w_ + (c // c0) * h_ * w_ + h * w_ + w, n // 16, n % 16, c % c0] = x[n, c, d, h, w]
    return out


def loops_fractal_nz(x: np.ndarray, c0: int) -> np.ndarray:  # x is ND (..., M, N) or (N,)
    if x.ndim == 1:
        out = np.zeros((cdiv(x.shape[0], c0), 1, 16, c0), x.dtype)
        for (n,) in np.ndindex(*x.shape):
            out[n // c0, 0, 0, n % c0] = x[n]
        return out
    *batch, m_, n_ = x.shape
    out = np.zeros((*batch, cdiv(n_, c0), cdiv(m_, 16), 16, c0), x.dtype)
    for idx in np.ndindex(*x.shape):
        *b, m, n = idx
        out[(*b, n // c0, m // 16, m % 16, n % c0)] = x[idx]
    return out


# ---- the spec's reshape/transpose recipes --------------------------------------------------------------------

LETTERS = {"NCHW": "NCHW", "NHWC": "NHWC", "HWCN": "HWCN", "CHWN": "CHWN", "NCDHW": "NCDHW", "NDHWC": "NDHWC",
           "DHWCN": "DHWCN"}


def permute(x: np.ndarray, src: str, dst: str) -> np.ndarray:
    """Plain permutation by letters (ND = the same order)."""
    if src == "ND" or dst == "ND" or src == dst:
        return x.copy()
    return np.ascontiguousarray(np.transpose(x, [src.index(ch) for ch in dst]))


def recipe_decode_nc1hwc0(dev: np.ndarray, c: int) -> np.ndarray:  # -> NCHW
    n, c1, h, w, c0 = dev.shape
    return np.ascontiguousarray(dev.transpose(0, 1, 4, 2, 3).reshape(n, c1 * c0, h, w)[:, :c])


def recipe_decode_ndc1hwc0(dev: np.ndarray, c: int) -> np.ndarray:  # -> NCDHW
    n, d, c1, h, w, c0 = dev.shape
    return np.ascontiguousarray(dev.transpose(0, 2, 5, 1, 3, 4).reshape(n, c1 * c0, d, h, w)[:, :c])


def recipe_decode_fractal_z(dev: np.ndarray, n: int, c: int, h: int, w: int, to: str = "NCHW") -> np.ndarray:
    _, n1, n0, c0 = dev.shape
    c1 = dev.shape[0] // (h * w)
    six = dev.reshape(c1, h, w, n1, n0, c0)
    if to == "HWCN":
        return np.ascontiguousarray(six.transpose(1, 2, 0, 5, 3, 4).reshape(h, w, c1 * c0, n1 * n0)[:, :, :c, :n])
    return np.ascontiguousarray(six.transpose(3, 4, 0, 5, 1, 2).reshape(n1 * n0, c1 * c0, h, w)[:n, :c])


def recipe_decode_fractal_z_3d(dev: np.ndarray, n: int, c: int, d: int, h: int, w: int) -> np.ndarray:
    _, n1, n0, c0 = dev.shape
    c1 = dev.shape[0] // (d * h * w)
    seven = dev.reshape(d, c1, h, w, n1, n0, c0)
    return np.ascontiguousarray(seven.transpose(4, 5, 1, 6, 0, 2, 3).reshape(n1 * n0, c1 * c0, d, h, w)[:n, :c])


def recipe_decode_fractal_nz(dev: np.ndarray, original: tuple[int, ...]) -> np.ndarray:
    *_, n1, m1, m0, n0 = dev.shape
    b = int(np.prod(dev.shape[:-4], dtype=np.int64))
    nd = dev.reshape(b, n1, m1, m0, n0).transpose(0, 2, 3, 1, 4).reshape(b, m1 * m0, n1 * n0)
    if len(original) == 1:
        return np.ascontiguousarray(nd[0, 0, : original[0]])
    m, n = original[-2:]
    return np.ascontiguousarray(nd[:, :m, :n].reshape(original))


def recipe_encode(x: np.ndarray, device: str, plain: str, c0: int) -> np.ndarray:
    """Inverse recipes: pad with zeros, split, transpose."""
    if device in ("NC1HWC0", "NC1HWC0_C04"):
        t = permute(x, plain, "NCHW")
        n, c, h, w = t.shape
        c1 = cdiv(c, c0)
        t = np.pad(t, ((0, 0), (0, c1 * c0 - c), (0, 0), (0, 0)))
        return np.ascontiguousarray(t.reshape(n, c1, c0, h, w).transpose(0, 1, 3, 4, 2))
    if device == "NDC1HWC0":
        t = permute(x, plain, "NCDHW")
        n, c, d, h, w = t.shape
        c1 = cdiv(c, c0)
        t = np.pad(t, ((0, 0), (0, c1 * c0 - c), (0, 0), (0, 0), (0, 0)))
        return np.ascontiguousarray(t.reshape(n, c1, c0, d, h, w).transpose(0, 3, 1, 4, 5, 2))
    if device in ("FRACTAL_Z", "FRACTAL_Z_C04"):
        t = permute(x, plain, "NCHW")
        n, c, h, w = t.shape
        c1, n1 = cdiv(c, c0), cdiv(n, 16)
        t = np.pad(t, ((0, n1 * 16 - n), (0, c1 * c0 - c), (0, 0), (0, 0)))
        six = t.reshape(n1, 16, c1, c0, h, w).transpose(2, 4, 5, 0, 1, 3)
        return np.ascontiguousarray(six.reshape(c1 * h * w, n1, 16, c0))
    if device == "FRACTAL_Z_3D":
        t = permute(x, plain, "NCDHW")
        n, c, d, h, w = t.shape
        c1, n1 = cdiv(c, c0), cdiv(n, 16)
        t = np.pad(t, ((0, n1 * 16 - n), (0, c1 * c0 - c), (0, 0), (0, 0), (0, 0)))
        seven = t.reshape(n1, 16, c1, c0, d, h, w).transpose(4, 2, 5, 6, 0, 1, 3)
        return np.ascontiguousarray(seven.reshape(d * c1 * h * w, n1, 16, c0))
    if device == "FRACTAL_NZ":
        t = x.reshape(1, -1) if x.ndim == 1 else x
        *batch, m, n = t.shape
        m1, n1 = cdiv(m, 16), cdiv(n, c0)
        t = np.pad(t, [(0, 0)] * len(batch) + [(0, m1 * 16 - m), (0, n1 * c0 - n)])
        t = t.reshape(*batch, m1, 16, n1, c0)
        k = len(batch)
        t = t.transpose(*range(k), k + 2, k, k + 1, k + 3)
        return np.ascontiguousarray(t if x.ndim > 1 else t.reshape(n1, m1, 16, c0))
    raise AssertionError(device)
