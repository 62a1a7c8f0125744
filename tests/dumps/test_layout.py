"""The layout codec against the spec's formulas (explicit loops), the spec's recipes, and round trips."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import layout_reference as ref
from dumpcmp.dumps import layout as L
from dumpcmp.errors import DumpcmpError

DTYPES = [np.uint8, np.int16, np.float32, np.float64]  # element sizes 1, 2, 4, 8
FAMILY4 = ["NCHW", "NHWC", "HWCN", "CHWN", "ND"]
FAMILY5 = ["NCDHW", "NDHWC", "DHWCN", "ND"]


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261121)


def values(shape, dtype, rng):
    """Distinct-ish non-zero values, so a misplaced or dropped element shows."""
    n = int(np.prod(shape, dtype=np.int64))
    v = rng.permutation(n) % 250 + 1 if np.dtype(dtype).itemsize == 1 else rng.permutation(n) + 1
    return v.astype(dtype).reshape(shape)


# ---- hand-worked: every element position against the spec's formula, loop by loop --------------------------


def test_nc1hwc0_every_position(rng):
    x = values((2, 5, 3, 2), np.float16, rng)  # C = 5 with C0 = 4: C1 = 2, three padded channels
    want = ref.loops_nc1hwc0(x, 4)
    got = L.convert(x, "NCHW", "NC1HWC0", c0=4)
    assert got.shape == (2, 2, 3, 2, 4)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(L.convert(want, "NC1HWC0", "NCHW", original_shape=x.shape), x)
    # element (1, 4, 2, 1) sits at [1, 4 // 4, 2, 1, 4 % 4]
    assert got[1, 1, 2, 1, 0] == x[1, 4, 2, 1]
    assert not got[:, 1, :, :, 1:].any()  # padding channels 5..7 are zero


def test_nc1hwc0_c04_every_position(rng):
    x = values((1, 3, 2, 3), np.int32, rng)
    want = ref.loops_nc1hwc0(x, 4)
    got = L.convert(x, "NCHW", "NC1HWC0_C04")  # C0 = 4 by default for the _C04 formats
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(L.convert(want, "NC1HWC0_C04", "NCHW", original_shape=x.shape), x)


def test_ndc1hwc0_every_position(rng):
    x = values((2, 3, 2, 2, 3), np.int16, rng)  # NCDHW
    want = ref.loops_ndc1hwc0(x, 2)
    got = L.convert(x, "NCDHW", "NDC1HWC0", c0=2)
    assert got.shape == (2, 2, 2, 2, 3, 2)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(L.convert(want, "NDC1HWC0", "NCDHW", original_shape=x.shape), x)


def test_fractal_z_every_position(rng):
    x = values((18, 5, 2, 3), np.float32, rng)  # N = 18 -> N1 = 2; C = 5, C0 = 4 -> C1 = 2
    want = ref.loops_fractal_z(x, 4)
    got = L.convert(x, "NCHW", "FRACTAL_Z", c0=4)
    assert got.shape == (2 * 2 * 3, 2, 16, 4)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(L.convert(want, "FRACTAL_Z", "NCHW", original_shape=x.shape), x)
    assert got[(4 // 4) * 6 + 1 * 3 + 2, 17 // 16, 17 % 16, 4 % 4] == x[17, 4, 1, 2]


def test_fractal_z_c04_every_position(rng):
    x = values((3, 3, 3, 3), np.float16, rng)
    want = ref.loops_fractal_z(x, 4)
    got = L.convert(x, "NCHW", "FRACTAL_Z_C04")
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(L.convert(want, "FRACTAL_Z_C04", "NCHW", original_shape=x.shape), x)


@pytest.mark.parametrize(
    "n, cin, h, w, groups, c0",
    [
        (4, 3, 2, 2, 2, 16),    # e = 2: two groups share one fractal block
        (6, 3, 1, 2, 6, 16),    # e = 6 (capped by G)
        (32, 1, 2, 1, 32, 16),  # depthwise: e = 16, G' = 2
        (12, 5, 2, 2, 3, 8),
        (48, 16, 1, 1, 3, 16),  # e = 1: groups side by side
        (8, 2, 3, 1, 4, 4),
    ],
)
def test_grouped_fractal_z_every_position(n, cin, h, w, groups, c0, rng):
    x = values((n, cin, h, w), np.int16, rng)
    want = ref.loops_fractal_z_grouped(x, groups, c0)
    got = L.convert(x, "NCHW", "FRACTAL_Z", c0=c0, groups=groups)
    np.testing.assert_array_equal(got, want)
    for plain in FAMILY4:
        back = L.convert(want, "FRACTAL_Z", plain, original_shape=x.shape, original_format="NCHW", groups=groups)
        np.testing.assert_array_equal(back, ref.permute(x, "NCHW", plain))
        np.testing.assert_array_equal(L.convert(back, plain, "FRACTAL_Z", c0=c0, groups=groups), want)


def test_fractal_z_3d_every_position(rng):
    x = values((17, 3, 2, 2, 2), np.float32, rng)  # NCDHW
    want = ref.loops_fractal_z_3d(x, 2)
    got = L.convert(x, "NCDHW", "FRACTAL_Z_3D", c0=2)
    assert got.shape == (2 * 2 * 2 * 2, 2, 16, 2)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(L.convert(want, "FRACTAL_Z_3D", "NCDHW", original_shape=x.shape), x)


@pytest.mark.parametrize("shape", [(3, 17, 5), (20, 9), (7,), (2, 1, 33, 4)])
def test_fractal_nz_every_position(shape, rng):
    x = values(shape, np.float16, rng)
    want = ref.loops_fractal_nz(x, 4)
    got = L.convert(x, "ND", "FRACTAL_NZ", c0=4)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(L.convert(want, "FRACTAL_NZ", "ND", original_shape=shape), x)


# ---- the spec's recipes --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_recipes_agree(dtype, rng):
    x = values((3, 21, 4, 5), dtype, rng)
    dev = L.convert(x, "NCHW", "NC1HWC0", c0=8)
    np.testing.assert_array_equal(L.convert(dev, "NC1HWC0", "NCHW", original_shape=x.shape),
                                  ref.recipe_decode_nc1hwc0(dev, 21))
    fz = L.convert(x, "NCHW", "FRACTAL_Z", c0=16)
    np.testing.assert_array_equal(fz, ref.recipe_encode(x, "FRACTAL_Z", "NCHW", 16))
    np.testing.assert_array_equal(L.convert(fz, "FRACTAL_Z", "NCHW", original_shape=x.shape),
                                  ref.recipe_decode_fractal_z(fz, 3, 21, 4, 5))
    hwcn = L.convert(fz, "FRACTAL_Z", "HWCN", original_shape=(3, 21, 4, 5), original_format="NCHW")
    np.testing.assert_array_equal(hwcn, ref.recipe_decode_fractal_z(fz, 3, 21, 4, 5, to="HWCN"))
    x5 = values((2, 19, 3, 2, 3), dtype, rng)
    d6 = L.convert(x5, "NCDHW", "NDC1HWC0", c0=16)
    np.testing.assert_array_equal(L.convert(d6, "NDC1HWC0", "NCDHW", original_shape=x5.shape),
                                  ref.recipe_decode_ndc1hwc0(d6, 19))
    fz3 = L.convert(x5, "NCDHW", "FRACTAL_Z_3D", c0=8)
    np.testing.assert_array_equal(L.convert(fz3, "FRACTAL_Z_3D", "NCDHW", original_shape=x5.shape),
                                  ref.recipe_decode_fractal_z_3d(fz3, 2, 19, 3, 2, 3))
    m = values((2, 3, 35, 19), dtype, rng)
    nz = L.convert(m, "ND", "FRACTAL_NZ", c0=16)
    np.testing.assert_array_equal(L.convert(nz, "FRACTAL_NZ", "ND", original_shape=m.shape),
                                  ref.recipe_decode_fractal_nz(nz, m.shape))


# ---- round trips over every layout, element size, C0 and plain format ----------------------------------------

DEVICE_CASES = [
    ("NC1HWC0", FAMILY4, 4), ("NC1HWC0_C04", FAMILY4, 4), ("FRACTAL_Z", FAMILY4, 4), ("FRACTAL_Z_C04", FAMILY4, 4),
    ("NDC1HWC0", FAMILY5, 5), ("FRACTAL_Z_3D", FAMILY5, 5), ("FRACTAL_NZ", ["ND", "NCHW", "NCDHW"], 0),
]


@pytest.mark.parametrize(
    "device, plains, rank, c0",
    [(d, p, r, c0) for d, p, r in DEVICE_CASES for c0 in ([4] if d.endswith("_C04") else [4, 8, 16, 32, 64])],
)
@pytest.mark.parametrize("dtype", DTYPES)
def test_round_trip(device, plains, rank, c0, dtype, rng):
    for plain in plains:
        for _ in range(3):
            if device == "FRACTAL_NZ":
                r = {"ND": int(rng.integers(1, 5)), "NCHW": 4, "NCDHW": 5}[plain]
                shape = tuple(int(d) for d in rng.integers(1, 4, size=max(r - 2, 0))) + (
                    int(rng.integers(1, 40)), int(rng.integers(1, 3 * c0)))
                shape = shape[-r:]
            else:
                shape = tuple(int(d) for d in rng.integers(1, 6, size=rank))
                # channels and kernels that are rarely multiples of C0 or 16
                if plain != "ND":
                    shape = list(shape)
                    shape[plain.index("C")] = int(rng.integers(1, 2 * c0 + 3))
                    shape[plain.index("N")] = int(rng.integers(1, 40))
                    shape = tuple(shape)
            x = values(shape, dtype, rng)
            dev = L.convert(x, plain, device, c0=c0)
            np.testing.assert_array_equal(dev, ref.recipe_encode(x, device, plain, c0))
            back = L.convert(dev, device, plain, original_shape=shape)
            assert back.dtype == x.dtype
            np.testing.assert_array_equal(back, x)


@pytest.mark.parametrize("src", ["NCHW", "NHWC", "HWCN", "CHWN"])
@pytest.mark.parametrize("dst", ["NCHW", "NHWC", "HWCN", "CHWN", "ND"])
def test_plain_permutations(src, dst, rng):
    x = values((3, 7, 5, 4), np.float32, rng)
    got = L.convert(x, src, dst)
    np.testing.assert_array_equal(got, ref.permute(x, src, dst))
    np.testing.assert_array_equal(L.convert(got, dst, src), x)


@pytest.mark.parametrize("src", ["NCDHW", "NDHWC", "DHWCN"])
@pytest.mark.parametrize("dst", ["NCDHW", "NDHWC", "DHWCN"])
def test_plain_permutations_5d(src, dst, rng):
    x = values((2, 3, 4, 5, 6), np.int8, rng)
    np.testing.assert_array_equal(L.convert(x, src, dst), ref.permute(x, src, dst))


def test_device_to_other_plain_orders(rng):
    x = values((20, 35, 3, 4), np.float16, rng)  # NCHW
    dev = L.convert(x, "NCHW", "NC1HWC0")
    for plain in ["NHWC", "HWCN", "CHWN"]:
        got = L.convert(dev, "NC1HWC0", plain, original_shape=x.shape, original_format="NCHW")
        np.testing.assert_array_equal(got, ref.permute(x, "NCHW", plain))
        # the original shape may also be written in the destination's order (the default)
        got2 = L.convert(dev, "NC1HWC0", plain, original_shape=ref.permute(x, "NCHW", plain).shape)
        np.testing.assert_array_equal(got2, got)
    fz = L.convert(x, "NCHW", "FRACTAL_Z")
    np.testing.assert_array_equal(L.convert(fz, "FRACTAL_Z", "NHWC", original_shape=x.shape, original_format="NCHW"),
                                  ref.permute(x, "NCHW", "NHWC"))


def test_large_tensor_uses_threads_and_tiles(rng):
    # > 2 MB, so the threaded path runs; odd sizes cut tiles and chunks at awkward places
    x = rng.standard_normal((3, 37, 61, 67)).astype(np.float32)
    for device in ["NC1HWC0", "FRACTAL_Z"]:
        dev = L.convert(x, "NCHW", device, threads=2)
        np.testing.assert_array_equal(dev, ref.recipe_encode(x, device, "NCHW", 16))
        for threads in (1, 2):
            np.testing.assert_array_equal(L.convert(dev, device, "NCHW", original_shape=x.shape, threads=threads), x)
    m = rng.standard_normal((3, 301, 917)).astype(np.float16)
    nz = L.convert(m, "ND", "FRACTAL_NZ")
    np.testing.assert_array_equal(nz, ref.recipe_encode(m, "FRACTAL_NZ", "ND", 16))
    np.testing.assert_array_equal(L.convert(nz, "FRACTAL_NZ", "ND", original_shape=m.shape), m)


def test_bool_and_ml_dtypes(rng):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = rng.integers(0, 2, size=(2, 17, 3, 3)).astype(bool)
    dev = L.convert(x, "NCHW", "NC1HWC0")
    assert dev.dtype == bool and dev.shape[-1] == 32  # 1-byte elements default to C0 = 32
    np.testing.assert_array_equal(L.convert(dev, "NC1HWC0", "NCHW", original_shape=x.shape), x)
    b = rng.standard_normal((40, 33)).astype(ml_dtypes.bfloat16)
    nz = L.convert(b, "ND", "FRACTAL_NZ")
    assert nz.dtype == b.dtype
    np.testing.assert_array_equal(L.convert(nz, "FRACTAL_NZ", "ND", original_shape=b.shape).view(np.uint16),
                                  b.view(np.uint16))


def test_padded_output(rng):
    x = values((2, 5, 3, 3), np.float32, rng)
    dev = L.convert(x, "NCHW", "NC1HWC0", c0=4)
    padded = L.convert(dev, "NC1HWC0", "NCHW", padded=True)
    assert padded.shape == (2, 8, 3, 3)
    np.testing.assert_array_equal(padded[:, :5], x)
    assert not padded[:, 5:].any()
    m = values((20, 9), np.float16, rng)
    nz = L.convert(m, "ND", "FRACTAL_NZ", c0=8)
    p = L.convert(nz, "FRACTAL_NZ", "ND", padded=True)
    assert p.shape == (32, 16)
    np.testing.assert_array_equal(p[:20, :9], m)
    assert not p[20:].any() and not p[:, 9:].any()
    fz = L.convert(x, "NCHW", "FRACTAL_Z", c0=4)
    pf = L.convert(fz, "FRACTAL_Z", "NCHW", original_shape=x.shape, padded=True)
    assert pf.shape == (16, 8, 3, 3)
    np.testing.assert_array_equal(pf[:2, :5], x)


# ---- chunked form ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "src, plain_shape, dst, kwargs",
    [
        ("NCHW", (3, 37, 9, 11), "NC1HWC0", {}),
        ("NCHW", (20, 19, 3, 5), "FRACTAL_Z", {}),
        ("NCHW", (12, 5, 2, 3), "FRACTAL_Z", {"groups": 3}),
        ("NHWC", (12, 5, 2, 3), "FRACTAL_Z", {"groups": 4}),  # N and C not adjacent: the pair table per element
        ("ND", (3, 45, 70), "FRACTAL_NZ", {}),
        ("NCDHW", (2, 19, 3, 4, 5), "NDC1HWC0", {}),
        ("NCHW", (4, 5, 6, 7), "HWCN", {}),
    ],
)
@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float64])
def test_decode_range_and_source_indices(src, plain_shape, dst, kwargs, dtype, rng):
    x = values(plain_shape, dtype, rng)
    dev = L.convert(x, src, dst, **kwargs)
    back_fmt = src
    plan = L.make_plan(dst, dev.shape, back_fmt, x.shape, itemsize=np.dtype(dtype).itemsize,
                       groups=kwargs.get("groups", 1))
    full = np.empty(x.shape, dtype)
    plan.run(dev, full)
    np.testing.assert_array_equal(full, x)
    flat_full, flat_dev = full.ravel(), dev.ravel()
    total = x.size
    windows = [(0, total), (0, 1), (total - 1, 1), (total, 0)]
    windows += [(int(a), int(rng.integers(0, total - a + 1))) for a in rng.integers(0, total, size=20)]
    for first, count in windows:
        got = plan.decode_range(dev, first, count)
        np.testing.assert_array_equal(got, flat_full[first:first + count])
        idx = plan.source_indices(first, count)
        assert idx.dtype == np.uint64 and idx.shape == (count,)
        np.testing.assert_array_equal(flat_dev[idx.astype(np.int64)], flat_full[first:first + count])
    with pytest.raises(IndexError):
        plan.decode_range(dev, total - 1, 2)
    with pytest.raises(IndexError):
        plan.source_indices(total + 1, 0)


def test_source_indices_hit_every_data_position_once(rng):
    x = values((5, 21, 3, 2), np.int16, rng)
    dev = L.convert(x, "NCHW", "FRACTAL_Z", c0=8)
    plan = L.make_plan("FRACTAL_Z", dev.shape, "NCHW", x.shape, itemsize=2)
    idx = plan.source_indices(0, x.size).astype(np.int64)
    assert len(np.unique(idx)) == x.size and idx.max() < dev.size
    mask = np.zeros(dev.size, bool)
    mask[idx] = True
    assert not dev.ravel()[~mask].any()  # everything else is padding


# ---- bad input ---------------------------------------------------------------------------------------------------


def test_inconsistent_shapes():
    dev = np.zeros((1, 2, 5, 5, 16), np.float16)
    with pytest.raises(ValueError, match=r"does not hold NCHW \(1, 40, 5, 5\).*\(1, 3, 5, 5, 16\)"):
        L.convert(dev, "NC1HWC0", "NCHW", original_shape=(1, 40, 5, 5))
    with pytest.raises(ValueError, match="H and W"):
        L.convert(np.zeros((75, 2, 16, 16), np.float16), "FRACTAL_Z", "NCHW")
    with pytest.raises(ValueError, match="original shape"):
        L.convert(np.zeros((2, 3, 16, 16), np.float16), "FRACTAL_NZ", "ND")
    with pytest.raises(ValueError, match="5 dims"):
        L.convert(np.zeros((1, 2, 5, 16), np.float16), "NC1HWC0", "NCHW", original_shape=(1, 20, 5, 1))
    with pytest.raises(ValueError, match="4 dims"):
        L.convert(np.zeros((2, 3, 4)), "NCHW", "NC1HWC0")
    with pytest.raises(ValueError, match="C0"):
        L.convert(np.zeros((1, 2, 5, 5, 0)), "NC1HWC0", "NCHW", padded=True)
    with pytest.raises(ValueError, match="negative"):
        L.make_plan("NC1HWC0", (1, -2, 5, 5, 16), "NCHW", (1, 20, 5, 5), itemsize=2)


def test_size_mismatch():
    with pytest.raises(ValueError, match="source shape"):
        L.convert(np.zeros(100, np.float16), "NC1HWC0", "NCHW", shape=(1, 2, 5, 5, 16), padded=True)
    plan = L.make_plan("NC1HWC0", (1, 2, 5, 5, 16), "NCHW", (1, 20, 5, 5), itemsize=2)
    with pytest.raises(ValueError, match="elements"):
        plan.run(np.zeros(799, np.float16), np.empty((1, 20, 5, 5), np.float16))
    with pytest.raises(ValueError, match="elements"):
        plan.run(np.zeros(800, np.float16), np.empty((1, 20, 5, 4), np.float16))
    with pytest.raises(ValueError, match="2-byte"):
        plan.run(np.zeros(800, np.float32), np.empty((1, 20, 5, 5), np.float32))
    with pytest.raises(ValueError, match="read-only"):
        ro = np.empty((1, 20, 5, 5), np.float16)
        ro.flags.writeable = False
        plan.run(np.zeros(800, np.float16), ro)
    with pytest.raises(ValueError, match="C-contiguous"):
        plan.run(np.zeros(1600, np.float16)[::2], np.empty((1, 20, 5, 5), np.float16))
    with pytest.raises(ValueError, match="1, 2, 4 or 8"):
        L.convert(np.zeros((1, 3, 2, 2), np.complex128), "NCHW", "NC1HWC0")
    with pytest.raises(ValueError, match="keeps the shape"):
        L.make_plan("ND", (2, 3), "NCHW", (3, 2, 1, 1), itemsize=4)


@pytest.mark.parametrize(
    "src, dst",
    [("NC1HWC0", "NCDHW"), ("NC1HWC0", "FRACTAL_Z"), ("NCHW", "NCDHW"), ("NCHW", "FRACTAL_DECONV"),
     ("C1HWNCoC0", "NCHW"), ("NDC1HWC0", "NHWC")],
)
def test_unsupported_pairs(src, dst):
    with pytest.raises(ValueError, match="unsupported|different axis|dims"):
        L.make_plan(src, (1, 1, 1, 1, 16), dst, (1, 1, 1, 1), itemsize=2)
    assert (src, dst) not in L.supported_pairs()


def test_unknown_format_and_errors_are_dumpcmp_errors():
    with pytest.raises(DumpcmpError, match="unknown format 'NOPE'"):
        L.convert(np.zeros(4), "NOPE", "ND")
    with pytest.raises(L.LayoutError):
        L.convert(np.zeros((2, 3, 4, 5)), "NCHW", "NCDHW")


def test_groups():
    x = np.ones((6, 2, 3, 3), np.float16)
    with pytest.raises(ValueError, match="groups = 4 does not divide N = 6"):
        L.convert(x, "NCHW", "FRACTAL_Z", groups=4)
    with pytest.raises(ValueError, match="only applies to FRACTAL_Z"):
        L.convert(x, "NCHW", "NC1HWC0", groups=2)
    depthwise = np.ones((32, 1, 1, 1), np.float16)
    dev = L.convert(depthwise, "NCHW", "FRACTAL_Z", groups=32)
    assert dev.shape == (2, 1, 16, 16)  # e = 16 groups per block
    with pytest.raises(ValueError, match="does not hold"):  # the wrong group count gives another packing
        L.convert(dev, "FRACTAL_Z", "NCHW", original_shape=depthwise.shape, groups=1)
    with pytest.raises(ValueError, match="grouped"):
        L.convert(dev, "FRACTAL_Z", "NCHW", original_shape=depthwise.shape, groups=32, padded=True)


def test_supported_pairs_cover_the_original_tool():
    pairs = set(L.supported_pairs())
    original = [("FRACTAL_NZ", "NCHW"), ("FRACTAL_NZ", "ND"), ("HWCN", "FRACTAL_Z"), ("HWCN", "NCHW"),
                ("HWCN", "NHWC"), ("NC1HWC0", "HWCN"), ("NC1HWC0", "NCHW"), ("NC1HWC0", "NHWC"),
                ("NCHW", "FRACTAL_Z"), ("NCHW", "NHWC"), ("NHWC", "FRACTAL_Z"), ("NHWC", "HWCN"), ("NHWC", "NCHW")]
    assert set(original) <= pairs
    for device in L.DEVICE_FORMATS:
        assert (device, "ND") in pairs and ("ND", device) in pairs


# ---- the fast paths: padding written in place, blocked runs, staged FRACTAL_Z, original shapes checked -------------


def encode_into_garbage(x, plain, device, c0, threads, groups=1):
    """Encode through a plan into a destination full of 0xFF bytes, so padding that is not written shows."""
    shape = L.device_shape(device, plain, x.shape, c0=c0, groups=groups)
    plan = L.make_plan(plain, x.shape, device, shape, itemsize=x.dtype.itemsize, groups=groups)
    out = np.empty(shape, x.dtype)
    out.view(np.uint8)[...] = 0xFF
    plan.run(x, out, threads)
    return out


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", DTYPES)
def test_encode_writes_the_padding_itself(dtype, threads, rng):
    # channels and kernels not multiples of C0 or 16, so every device format has padding boxes (some overlapping)
    cases = [
        ((3, 21, 4, 5), "NCHW", "NC1HWC0", 16), ((2, 5, 3, 3), "NHWC", "NC1HWC0_C04", 4),
        ((19, 21, 3, 2), "NCHW", "FRACTAL_Z", 16), ((5, 3, 2, 2), "HWCN", "FRACTAL_Z_C04", 4),
        ((3, 20, 2, 3, 2), "NCDHW", "NDC1HWC0", 8), ((17, 5, 3, 2, 2), "NCDHW", "FRACTAL_Z_3D", 4),
        ((2, 3, 19, 37), "ND", "FRACTAL_NZ", 16), ((37,), "ND", "FRACTAL_NZ", 8), ((5, 16), "ND", "FRACTAL_NZ", 16),
        ((16, 32, 3, 3), "NCHW", "FRACTAL_Z", 16),  # no padding at all: no box
    ]
    for shape, plain, device, c0 in cases:
        x = values(shape, dtype, rng)
        np.testing.assert_array_equal(encode_into_garbage(x, plain, device, c0, threads),
                                      ref.recipe_encode(x, device, plain, c0))
    # grouped FRACTAL_Z interleaves padding with data: cleared as a whole first
    x = values((12, 3, 2, 2), dtype, rng)
    np.testing.assert_array_equal(encode_into_garbage(x, "NCHW", "FRACTAL_Z", 16, threads, groups=3),
                                  ref.loops_fractal_z_grouped(x, 3, 16))


def test_encode_padding_of_large_tensors_in_several_tasks(rng):
    # > 2 MB with most of the device tensor padding (C = 3 of C0 = 16), so zeroing is split over tasks and threads
    x = rng.standard_normal((40, 3, 67, 71)).astype(np.float32)
    for device in ["NC1HWC0", "FRACTAL_Z"]:
        for threads in (1, 2):
            np.testing.assert_array_equal(encode_into_garbage(x, "NCHW", device, 16, threads),
                                          ref.recipe_encode(x, device, "NCHW", 16))
    m = rng.standard_normal((5, 333, 1001)).astype(np.float16)
    np.testing.assert_array_equal(encode_into_garbage(m, "ND", "FRACTAL_NZ", 16, 2), ref.loops_fractal_nz(m, 16))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("c0", [4, 16, 32])
def test_blocked_runs(dtype, c0, rng):
    # NZ <-> ND and 5HD <-> NHWC run blocks of rows; chunk sizes of 4..256 bytes (fixed and not) and a partial last
    # chunk; more rows than one block and a row count that does not fill the last block
    for shape in [(3, 70, 5 * c0), (2, 45, 3 * c0 + 5), (1, 33, c0 + 1)]:
        x = values(shape, dtype, rng)
        plan = L.make_plan("ND", shape, "FRACTAL_NZ", L.device_shape("FRACTAL_NZ", "ND", shape, c0=c0),
                           itemsize=x.dtype.itemsize)
        assert plan.kernel == "runs"
        dev = L.convert(x, "ND", "FRACTAL_NZ", c0=c0)
        np.testing.assert_array_equal(dev, ref.loops_fractal_nz(x, c0))
        for threads in (1, 2):
            np.testing.assert_array_equal(L.convert(dev, "FRACTAL_NZ", "ND", original_shape=shape, threads=threads), x)
        # windows that start and end inside rows and blocks
        plan = L.make_plan("FRACTAL_NZ", dev.shape, "ND", shape, itemsize=x.dtype.itemsize)
        flat = x.reshape(-1)
        for first, count in [(0, flat.size), (7, 3 * shape[-1] + 2), (shape[-1] * 17 + 3, shape[-1] * 40)]:
            count = min(count, flat.size - first)
            np.testing.assert_array_equal(plan.decode_range(dev, first, count), flat[first:first + count])
    nchw = values((2, 2 * c0 + 3, 7, 9), dtype, rng)
    nhwc = ref.permute(nchw, "NCHW", "NHWC")
    dev = L.convert(nhwc, "NHWC", "NC1HWC0", c0=c0)
    np.testing.assert_array_equal(dev, ref.loops_nc1hwc0(nchw, c0))
    np.testing.assert_array_equal(L.convert(dev, "NC1HWC0", "NHWC", original_shape=nhwc.shape), nhwc)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("hw", [(1, 1), (3, 3), (7, 7), (2, 5)])
def test_fractal_z_staged_tiles(dtype, hw, rng):
    # many kernels (slabs staged together), channels that are whole C0 blocks except, in the second shape, the last
    for n, c in [(80, 48), (70, 37)]:
        x = values((n, c) + hw, dtype, rng)
        want = ref.loops_fractal_z(x, 16)
        for threads in (1, 2):
            np.testing.assert_array_equal(encode_into_garbage(x, "NCHW", "FRACTAL_Z", 16, threads), want)
            np.testing.assert_array_equal(
                L.convert(want, "FRACTAL_Z", "NCHW", original_shape=x.shape, threads=threads), x)
        plan = L.make_plan("FRACTAL_Z", want.shape, "NCHW", x.shape, itemsize=x.dtype.itemsize)
        flat = x.reshape(-1)
        first = c * hw[0] * hw[1] * 3 + 5  # inside the fourth kernel
        np.testing.assert_array_equal(plan.decode_range(want, first, flat.size - first), flat[first:])


def test_large_fractal_z_threads_agree(rng):
    x = rng.standard_normal((256, 160, 3, 3)).astype(np.float16)  # 700 KB; and one above the threading threshold
    y = rng.standard_normal((512, 320, 3, 3)).astype(np.float32)
    for t in (x, y):
        want = ref.recipe_encode(t, "FRACTAL_Z", "NCHW", 16)
        for threads in (1, 2):
            np.testing.assert_array_equal(encode_into_garbage(t, "NCHW", "FRACTAL_Z", 16, threads), want)
            np.testing.assert_array_equal(L.convert(want, "FRACTAL_Z", "NCHW", original_shape=t.shape,
                                                    threads=threads), t)


def test_fractal_z_decode_of_kernels_larger_than_a_chunk(rng):
    # one kernel (N slab) of 600 KB, above the 1 MiB thread chunk's half: the work is split in blocks of whole
    # slabs, and 45 kernels leave a last block shorter than the others and an odd kernel at the end
    x = rng.standard_normal((45, 16 * 1200, 4, 4)).astype(np.float16)
    want = ref.recipe_encode(x, "FRACTAL_Z", "NCHW", 16)
    for threads in (1, 2):
        np.testing.assert_array_equal(L.convert(want, "FRACTAL_Z", "NCHW", original_shape=x.shape,
                                                threads=threads), x)
    plan = L.make_plan("FRACTAL_Z", want.shape, "NCHW", x.shape, itemsize=2)
    flat = x.reshape(-1)
    slab = x[0].size
    for first, count in [(slab - 3, 3 * slab + 7), (40 * slab, 5 * slab)]:
        np.testing.assert_array_equal(plan.decode_range(want, first, count), flat[first:first + count])


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_fractal_nz_decode_above_the_streaming_size(dtype, rng):
    # 64 MiB and more of plain side: whole decodes write rows with streaming stores. 4100 columns leave a last
    # chunk of 4 (fp16) elements per row; 1025 rows leave a one-row block at the end of every matrix
    shape = (8 if dtype == np.float16 else 4, 1025, 4100)
    x = rng.integers(-30000, 30000, size=shape).astype(dtype)
    assert x.nbytes >= 64 << 20
    dev = ref.recipe_encode(x, "FRACTAL_NZ", "ND", 32 // x.itemsize)
    for threads in (1, 2):
        got = np.full_like(x, 7)
        plan = L.make_plan("FRACTAL_NZ", dev.shape, "ND", x.shape, itemsize=x.itemsize)
        plan.run(dev, got, threads)
        np.testing.assert_array_equal(got, x)
    np.testing.assert_array_equal(ref.recipe_decode_fractal_nz(dev, x.shape), x)  # the reference itself agrees


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_fractal_nz_streaming_loop_both_directions(dtype, rng):
    # whole conversions of 64 MiB and more run the 16-row block loop with streaming stores (layout_nz.cpp):
    # 1000 rows crop the last fractal row block (1008 padded), 4224 columns are whole strips; the encode also
    # writes the padding rows itself, into a destination full of 0xFF
    shape = (8 if dtype == np.float16 else 4, 1000, 4224)
    x = rng.integers(-30000, 30000, size=shape).astype(dtype)
    assert x.nbytes >= 64 << 20
    c0 = 16
    want = ref.recipe_encode(x, "FRACTAL_NZ", "ND", c0)
    for threads in (1, 2):
        np.testing.assert_array_equal(encode_into_garbage(x, "ND", "FRACTAL_NZ", c0, threads), want)
        got = np.full_like(x, 7)
        L.make_plan("FRACTAL_NZ", want.shape, "ND", x.shape, itemsize=x.itemsize).run(want, got, threads)
        np.testing.assert_array_equal(got, x)


def test_fractal_nz_streaming_encode_pads_columns_and_takes_any_alignment(rng):
    # 4100 columns: the last strip holds 4 real columns and 12 of padding; a destination 2 bytes off 16-byte
    # alignment cannot take streaming stores and falls back to the generic loop; both give the reference bytes
    x = rng.integers(-30000, 30000, size=(8, 1025, 4100)).astype(np.float16)
    want = ref.recipe_encode(x, "FRACTAL_NZ", "ND", 16)
    np.testing.assert_array_equal(encode_into_garbage(x, "ND", "FRACTAL_NZ", 16, 2), want)
    plan = L.make_plan("ND", x.shape, "FRACTAL_NZ", want.shape, itemsize=2)
    raw = np.full(want.nbytes + 16, 0xFF, np.uint8)
    start = (-raw.ctypes.data) % 16 + 2
    out = raw[start:start + want.nbytes].view(np.float16).reshape(want.shape)
    plan.run(x, out, 2)
    np.testing.assert_array_equal(out, want)
    # a plain order other than ND is positional (batch dims by their product): the same bytes
    back = np.empty((2, 4, 1025, 4100), np.float16)
    L.make_plan("FRACTAL_NZ", want.shape, "NCHW", back.shape, itemsize=2).run(want, back, 2)
    np.testing.assert_array_equal(back.reshape(x.shape), x)


@pytest.mark.parametrize("shape, dtype", [((200, 19000, 3, 3), np.float16), ((100, 19000, 3, 3), np.float32),
                                          ((180, 4000, 5, 5), np.float32), ((6000, 3000, 1, 1), np.float32)])
def test_fractal_z_streaming_loops_both_directions(shape, dtype, rng):
    # 64 MiB and more: the encode builds each item's device rows in a stage and streams them out, the decode stages
    # device stretches and streams whole kernels' channel blocks out (layout_fz.cpp). 200/100/180 kernels leave a
    # padded last range (208/112/192), 19000/4000 channels a short last channel block; 1x1 kernels (no register
    # tiles) take the generic loops. The encode writes into 0xFF garbage, the decode starts from 7s.
    x = rng.integers(-30000, 30000, size=shape).astype(dtype)
    assert x.nbytes >= 64 << 20
    want = ref.recipe_encode(x, "FRACTAL_Z", "NCHW", 16)
    for threads in (1, 2):
        np.testing.assert_array_equal(encode_into_garbage(x, "NCHW", "FRACTAL_Z", 16, threads), want)
        got = np.full_like(x, 7)
        L.make_plan("FRACTAL_Z", want.shape, "NCHW", x.shape, itemsize=x.itemsize).run(want, got, threads)
        np.testing.assert_array_equal(got, x)
    n, c, h, w = shape
    np.testing.assert_array_equal(ref.recipe_decode_fractal_z(want, n, c, h, w), x)  # the reference agrees


@pytest.mark.parametrize("device, plain, shape, dtype, c0", [
    ("NC1HWC0", "NCHW", (4, 150, 240, 250), np.float16, 16),     # 150 channels: a last block of 6 and 10 padding
    ("NC1HWC0", "NCHW", (2, 40, 500, 501), np.float32, 16),      # 250500 positions: a short last stage block
    ("NDC1HWC0", "NCDHW", (2, 20, 7, 300, 301), np.float32, 16),
    ("NC1HWC0_C04", "NCHW", (30, 3, 700, 800), np.float16, 4),   # C0 = 4: no register tiles, element moves
    ("NC1HWC0", "NCHW", (3, 70, 400000, 1), np.int8, 32),         # 1-byte elements: element moves; W = 1
])
def test_5hd_streaming_encode(device, plain, shape, dtype, c0, rng):
    # 64 MiB and more of destination: encodes from planes orders write the device planes in order through a
    # stage with streaming stores (layout_5hd.cpp), padding channels included; into 0xFF garbage
    x = rng.integers(-100, 100, size=shape).astype(dtype)
    want = ref.recipe_encode(x, device, plain, c0)
    assert want.nbytes >= 64 << 20
    for threads in (1, 2):
        np.testing.assert_array_equal(encode_into_garbage(x, plain, device, c0, threads), want)
    # a destination off 16-byte alignment: ordinary stores up to the first aligned address
    plan = L.make_plan(plain, x.shape, device, want.shape, itemsize=x.itemsize)
    raw = np.full(want.nbytes + 16, 0xFF, np.uint8)
    start = (-raw.ctypes.data) % 16 + 2
    out = raw[start:start + want.nbytes].view(dtype).reshape(want.shape)
    plan.run(x, out, 2)
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("shape, dtype", [((600, 37, 3, 3), np.float32), ((1000, 40, 3, 3), np.float64)])
def test_fractal_z_encode_of_many_kernels_in_ranges(shape, dtype, rng):
    # more than 256 kernels: the device-order encode splits them in ranges, each range run over all channel
    # blocks before the next; padded kernels (600 -> 608, 1000 -> 1008) and channels end the last range
    x = values(shape, dtype, rng)
    want = ref.loops_fractal_z(x, 16)
    for threads in (1, 2):
        np.testing.assert_array_equal(encode_into_garbage(x, "NCHW", "FRACTAL_Z", 16, threads), want)


def test_original_shape_must_fit_the_device_shape():
    # NHWC (1, 20, 5, 6) is N=1, H=20, W=5, C=6: stored as (1, 1, 20, 5, 16), not (1, 2, 5, 6, 16)
    with pytest.raises(L.LayoutError, match=r"original shape does not fit the device shape.*\(1, 1, 20, 5, 16\)"):
        L.plain_shape("NC1HWC0", (1, 2, 5, 6, 16), "NCHW", original_shape=(1, 20, 5, 6), original_format="NHWC")
    # the same tensor described correctly
    assert L.plain_shape("NC1HWC0", (1, 2, 5, 6, 16), "NCHW", original_shape=(1, 5, 6, 20),
                         original_format="NHWC") == (1, 20, 5, 6)
    with pytest.raises(L.LayoutError, match="does not fit"):  # H*W of 3x3 against a 5x5 kernel's 2*25 rows
        L.plain_shape("FRACTAL_Z", (50, 2, 16, 16), "NCHW", original_shape=(20, 20, 3, 3))
    assert L.plain_shape("FRACTAL_Z", (50, 2, 16, 16), "NCHW", original_shape=(20, 20, 5, 5)) == (20, 20, 5, 5)
    with pytest.raises(L.LayoutError, match="does not fit"):  # N = 40 needs 3 blocks of C0 = 16
        L.plain_shape("FRACTAL_NZ", (2, 2, 16, 16), "ND", original_shape=(20, 40))
    with pytest.raises(L.LayoutError, match="does not fit"):
        L.plain_shape("FRACTAL_NZ", (2, 2, 2, 16, 16), "ND", original_shape=(3, 20, 30))  # batch 3, not 2
    assert L.plain_shape("FRACTAL_NZ", (2, 3, 2, 2, 16, 16), "ND", original_shape=(6, 20, 30)) == (6, 20, 30)


# ---- FRACTAL_Z-family encodes written in device order (planes: NCHW/NCDHW, runs: NHWC/NDHWC) ------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("c0", [4, 8, 16, 32])
@pytest.mark.parametrize("plain", ["NCHW", "NHWC", "HWCN"])
def test_fractal_z_encode_in_device_order(plain, c0, dtype, rng):
    # odd N (kernel padding), C not a multiple of C0 (channel padding in the last block only), H*W below, equal to
    # and above the register tile and not a multiple of the 32-position block (49 -> 25 + 24, 70 -> 24 + 23 + 23)
    for n, c, hw in [(19, 2 * c0 + 3, (3, 3)), (33, 3 * c0, (7, 7)), (5, c0 - 1, (1, 1)), (17, c0 + 1, (7, 10)),
                     (3, 2, (1, 5)), (16, 1, (2, 4))]:
        nchw = values((n, c) + hw, dtype, rng)
        want = ref.loops_fractal_z(nchw, c0)
        x = ref.permute(nchw, "NCHW", plain)
        np.testing.assert_array_equal(encode_into_garbage(x, plain, "FRACTAL_Z", c0, 1), want)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("plain", ["NCDHW", "NDHWC", "DHWCN"])
def test_fractal_z_3d_and_c04_encode_in_device_order(plain, dtype, rng):
    for shape, c0 in [((17, 5, 3, 2, 2), 4), ((33, 19, 2, 3, 5), 16), ((2, 40, 1, 6, 6), 32)]:
        ncdhw = values(shape, dtype, rng)
        x = ref.permute(ncdhw, "NCDHW", plain)
        np.testing.assert_array_equal(encode_into_garbage(x, plain, "FRACTAL_Z_3D", c0, 1),
                                      ref.loops_fractal_z_3d(ncdhw, c0))
    nchw = values((21, 3, 5, 9), dtype, rng)
    plain4 = plain.replace("D", "")  # NCHW, NHWC, HWCN
    x = ref.permute(nchw, "NCHW", plain4)
    np.testing.assert_array_equal(encode_into_garbage(x, plain4, "FRACTAL_Z_C04", 4, 1),
                                  ref.loops_fractal_z(nchw, 4))


@pytest.mark.parametrize("plain", ["NCHW", "NHWC", "HWCN", "NCDHW", "NDHWC"])
@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_large_fractal_z_encodes_split_over_threads(plain, dtype, rng):
    # above the threading threshold, with kernel ranges split into several work items per fractal row
    shape = (1000, 37, 5, 5) if len(plain) == 4 else (1000, 21, 2, 3, 3)
    x = ref.permute(rng.standard_normal(shape).astype(dtype), "NCHW" if len(plain) == 4 else "NCDHW", plain)
    device = "FRACTAL_Z" if len(plain) == 4 else "FRACTAL_Z_3D"
    want = ref.recipe_encode(x, device, plain, 16)
    for threads in (1, 2):
        np.testing.assert_array_equal(encode_into_garbage(x, plain, device, 16, threads), want)


def test_fractal_z_encode_on_every_simd_level(rng):
    # the register transposes differ per level (AVX2 8 x 8 fp32 tiles, SSE2 otherwise); DUMPCMP_SIMD lowers the
    # level for a child process, which checks its own result against the reference recipe
    import os
    import subprocess
    import sys
    script = (
        "import sys, numpy as np\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "from helpers import layout_reference as ref\n"
        "from dumpcmp.dumps import layout as L\n"
        "rng = np.random.default_rng(5)\n"
        "for dt, c0 in ((np.float16, 16), (np.float32, 8), (np.float64, 4)):\n"
        "    for shape in [(40, 35, 5, 7), (18, 64, 3, 3)]:\n"
        "        x = rng.standard_normal(shape).astype(dt)\n"
        "        got = L.convert(x, 'NCHW', 'FRACTAL_Z', c0=c0, threads=1)\n"
        "        assert np.array_equal(got, ref.recipe_encode(x, 'FRACTAL_Z', 'NCHW', c0)), (dt, shape)\n"
        "    x = rng.standard_normal((20, 33, 2, 3, 3)).astype(dt)\n"
        "    got = L.convert(x, 'NCDHW', 'FRACTAL_Z_3D', c0=16, threads=1)\n"
        "    assert np.array_equal(got, ref.recipe_encode(x, 'FRACTAL_Z_3D', 'NCDHW', 16)), dt\n"
        "print('ok')\n"
    )
    tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for level in ("scalar", "avx2"):
        env = dict(os.environ, DUMPCMP_SIMD=level)
        done = subprocess.run([sys.executable, "-c", script, tests], env=env, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


# ---- the decode rule: which plain layout a dump tensor is read in (hand-worked table) -----------------------------
# (device format, the graph's origin format of the ground truth, the ground truth's rank) -> plain layout.
# Used by the comparison (with the origin format), single-op compare (without: NCHW/NCDHW coordinates), locate and
# extract (neither: the format alone) and the histogram (the tensor's own original rank).
DECODE_TABLE = [
    # 4-D family: NCHW unless the graph says the ground truth is another lettered 4-D layout
    ("NC1HWC0", None, None, "NCHW"),
    ("NC1HWC0", None, 4, "NCHW"),
    ("NC1HWC0", None, 2, "NCHW"),            # an FC layer's (N, C): still the family's layout
    ("NC1HWC0", "NHWC", 4, "NHWC"),
    ("NC1HWC0", "nhwc", 4, "NHWC"),          # the graph's spelling, upper-cased
    ("NC1HWC0", "ND", 4, "NCHW"),            # ND names no axes
    ("NC1HWC0", "NDHWC", 4, "NCHW"),         # an origin of the other family is not followed
    ("NC1HWC0", None, 5, "NCDHW"),           # a 5-D ground truth makes it the 5-D family
    ("NC1HWC0", "NDHWC", 5, "NDHWC"),
    ("NC1HWC0", "NHWC", 5, "NCDHW"),
    ("NC1HWC0_C04", None, 4, "NCHW"),
    ("FRACTAL_Z", "HWCN", 4, "HWCN"),
    ("FRACTAL_Z", None, 2, "NCHW"),
    ("FRACTAL_Z_C04", "CHWN", 4, "CHWN"),
    # 5-D family: NCDHW unless the graph says another lettered 5-D layout, whatever the ground truth's rank
    ("NDC1HWC0", None, None, "NCDHW"),
    ("NDC1HWC0", None, 4, "NCDHW"),
    ("NDC1HWC0", None, 5, "NCDHW"),
    ("NDC1HWC0", "NDHWC", 5, "NDHWC"),
    ("NDC1HWC0", "NHWC", 5, "NCDHW"),
    ("FRACTAL_Z_3D", "DHWCN", 5, "DHWCN"),
    ("FRACTAL_Z_3D", None, None, "NCDHW"),
    # FRACTAL_NZ keeps the framework's axis order: ND, whatever the graph or the rank
    ("FRACTAL_NZ", None, None, "ND"),
    ("FRACTAL_NZ", None, 2, "ND"),
    ("FRACTAL_NZ", "NCHW", 4, "ND"),
    ("FRACTAL_NZ", None, 5, "ND"),
    # a plain layout in the dump (permuted to the ground truth's when they differ): five letters are the 5-D family
    ("NHWC", "NCHW", 4, "NCHW"),
    ("NHWC", None, 4, "NCHW"),
    ("NCDHW", None, 4, "NCDHW"),
    ("NDHWC", "NCDHW", 5, "NCDHW"),
    ("ND", None, 2, "NCHW"),
    ("ND", "NHWC", 4, "NHWC"),
]


@pytest.mark.parametrize("device_format, origin_format, ndim, plain", DECODE_TABLE)
def test_plain_target_table(device_format, origin_format, ndim, plain):
    assert L.plain_target(device_format, origin_format, ndim) == plain


def test_the_decode_table_covers_every_device_format():
    assert {row[0] for row in DECODE_TABLE} >= set(L.DEVICE_FORMATS)
    assert L.FIVE_D == ("NDC1HWC0", "FRACTAL_Z_3D") and "ND" not in L.LETTERED
    assert set(L.LETTERED) | {"ND"} == set(L.PLAIN_FORMATS)


@pytest.mark.parametrize("shape, fmt, padded", [
    ((2, 3), "NC1HWC0", (2, 3, 1, 1)),        # an FC layer's (N, C), padded as the device pads it
    ((2, 3), "FRACTAL_Z", (2, 3, 1, 1)),
    ((7,), "NC1HWC0_C04", (7, 1, 1, 1)),
    ((2, 3), "NDC1HWC0", (2, 3, 1, 1, 1)),
    ((2, 3, 4), "FRACTAL_Z_3D", (2, 3, 4, 1, 1)),
    ((1, 2, 3, 4), "NC1HWC0", (1, 2, 3, 4)),  # full rank: unchanged
    ((1, 2, 3, 4, 5), "NC1HWC0", (1, 2, 3, 4, 5)),
])
def test_pad_original(shape, fmt, padded):
    assert L.pad_original(shape, fmt) == padded


def test_every_reader_decodes_a_device_tensor_by_the_one_rule(tmp_path, rng):
    # locate/extract (feeds.decode) and the histogram read a device tensor into the layout plain_target names,
    # cropped by its original shape: the same array as converting it by hand.
    import dumpcmp
    from dumpcmp import _core as core
    from dumpcmp.debug.locate.feeds import decode
    from dumpcmp.dumps.dump import TensorData
    from dumpcmp.output.histogram.layers import _plain_source

    cases = [("NC1HWC0", (1, 20, 3, 3)), ("NDC1HWC0", (1, 2, 20, 3, 3)), ("FRACTAL_NZ", (5, 33, 17)),
             ("FRACTAL_Z", (20, 18, 3, 3))]
    for fmt, original in cases:
        plain = (rng.standard_normal(original) + 10).astype(np.float32)
        canonical = "NCDHW" if len(original) == 5 else ("ND" if fmt == "FRACTAL_NZ" else "NCHW")
        assert L.plain_target(fmt) == L.plain_target(fmt, None, len(original)) == canonical
        device = L.convert(plain, canonical, fmt)
        path = tmp_path / f"Op.op_{fmt}.1.{1700000000000000}"
        dumpcmp.write_dump(path, op_name="op", outputs=[TensorData(device, format=fmt, original_shape=original)])
        dump = dumpcmp.open_dump(path)
        np.testing.assert_array_equal(decode(dump.outputs[0]), plain, err_msg=fmt)
        source = _plain_source(dump, "output", 0)
        assert source.count == plain.size
        zeros = core.compare.source_from_array(np.zeros(plain.size, np.float32))
        got = np.empty(plain.size, np.float32)
        for i, value, _, _ in core.histogram.top_errors(source, zeros, plain.size):
            got[i] = value
        np.testing.assert_array_equal(got, plain.reshape(-1), err_msg=fmt)
