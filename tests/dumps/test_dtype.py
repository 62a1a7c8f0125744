"""Element decoders of the core against independent references: NumPy's float16, ml_dtypes, en_dtypes."""

from __future__ import annotations

import numpy as np
import pytest

from dumpcmp.support.native import core

ml_dtypes = pytest.importorskip("ml_dtypes")
en_dtypes = pytest.importorskip("en_dtypes")


def all_codes(bits):
    return np.arange(1 << bits, dtype=np.uint8 if bits <= 8 else np.uint16)


def pack4(codes):
    return (codes[0::2] | (codes[1::2] << 4)).astype(np.uint8)


@pytest.mark.parametrize("name, ref, bits", [
    ("FLOAT8_E5M2", ml_dtypes.float8_e5m2, 8),
    ("FLOAT8_E4M3FN", ml_dtypes.float8_e4m3fn, 8),
    ("FLOAT8_E8M0", ml_dtypes.float8_e8m0fnu, 8),
    ("HIFLOAT8", en_dtypes.hifloat8, 8),
    ("FLOAT6_E3M2", ml_dtypes.float6_e3m2fn, 6),
    ("FLOAT6_E2M3", ml_dtypes.float6_e2m3fn, 6),
    ("FLOAT4_E2M1", ml_dtypes.float4_e2m1fn, 4),
    ("FLOAT4_E1M2", en_dtypes.float4_e1m2, 4),
])
def test_small_floats_every_code(name, ref, bits, testhooks):
    codes = all_codes(bits).astype(np.uint8)
    expected = codes.view(ref).astype(np.float32)
    raw = pack4(codes) if bits == 4 else codes
    got = core.dtype.decode(name, raw, codes.size)
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(expected))
    # the metrics path decodes the same way
    np.testing.assert_array_equal(testhooks.to_float32(name, raw, codes.size), expected)


@pytest.mark.parametrize("name, ref, bits", [
    ("FLOAT8_E5M2", ml_dtypes.float8_e5m2, 8),
    ("FLOAT8_E4M3FN", ml_dtypes.float8_e4m3fn, 8),
    ("FLOAT6_E3M2", ml_dtypes.float6_e3m2fn, 6),
    ("FLOAT6_E2M3", ml_dtypes.float6_e2m3fn, 6),
    ("FLOAT4_E2M1", ml_dtypes.float4_e2m1fn, 4),
    ("HIFLOAT8", en_dtypes.hifloat8, 8),
])
def test_small_float_encoding_rounds_like_the_reference(rng, name, ref, bits):
    finite = np.abs(all_codes(bits).astype(np.uint8).view(ref).astype(np.float32))
    top = float(np.nanmax(finite[np.isfinite(finite)]))
    values = (rng.uniform(-top, top, 5000)).astype(np.float32)
    values[:3] = [0.0, top, -top]
    encoded = core.dtype.encode(name, values)
    got = core.dtype.decode(name, encoded, values.size)
    expected = values.astype(ref).astype(np.float32)
    if name == "HIFLOAT8":
        # en_dtypes' hifloat8 rounding is not documented as nearest: check we are at least as close
        assert np.all(np.abs(got - values) <= np.abs(expected - values) + 1e-12)
    else:
        np.testing.assert_array_equal(got, expected)


def test_bf16_every_code():
    codes = all_codes(16)
    expected = codes.view(ml_dtypes.bfloat16).astype(np.float32)
    got = core.dtype.decode("BF16", codes.view(np.uint8), codes.size)
    np.testing.assert_array_equal(got, expected)


def test_bf16_encoding_rounds_to_nearest_even(rng):
    values = rng.standard_normal(100000).astype(np.float32) * np.float32(1e3)
    encoded = core.dtype.encode("BF16", values)
    np.testing.assert_array_equal(encoded.view(np.uint16), values.astype(ml_dtypes.bfloat16).view(np.uint16))


def test_float16_every_code_both_ways(testhooks):
    codes = all_codes(16)
    halves = codes.view(np.float16)
    got = testhooks.to_float32("FLOAT16", codes.view(np.uint8), codes.size)
    np.testing.assert_array_equal(got, halves.astype(np.float32))
    # float32 -> float16 rounding (through COMPLEX32, which stores fp16 pairs) against NumPy
    rng = np.random.default_rng(1)
    values = np.concatenate([
        halves.astype(np.float32)[np.isfinite(halves)],
        rng.standard_normal(50000).astype(np.float32) * np.float32(1e-5),
        rng.standard_normal(50000).astype(np.float32) * np.float32(3e4),
        np.array([65519.99, 65520.0, 1e9, -1e9, 2.0**-25, 2.0**-25 * 1.0001, 2.0**-26], np.float32),
    ])
    if values.size % 2:
        values = values[:-1]
    packed = core.dtype.encode("COMPLEX32", values.view(np.complex64))
    with np.errstate(over="ignore"):
        expected = values.astype(np.float16)
    np.testing.assert_array_equal(packed.view(np.float16), expected)


@pytest.mark.parametrize("name, dtype", [("INT8", np.int8), ("UINT16", np.uint16), ("INT32", np.int32),
                                         ("INT64", np.int64), ("DOUBLE", np.float64), ("BOOL", np.bool_),
                                         ("UINT64", np.uint64)])
def test_native_types_to_float32(rng, name, dtype, testhooks):
    values = (rng.standard_normal(1000) * 100).astype(dtype)
    got = testhooks.to_float32(name, values.view(np.uint8), values.size)
    np.testing.assert_array_equal(got, values.astype(np.float32))


def test_unknown_type_name():
    with pytest.raises(ValueError, match="unknown data type name"):
        core.dtype.decode("FLOAT17", np.zeros(4, np.uint8), 1)
    with pytest.raises(ValueError, match="need 8 bytes"):
        core.dtype.decode("FLOAT", np.zeros(4, np.uint8), 2)


def _float16_bits_reference(codes):
    """IEEE binary16 -> binary32 bit patterns by integer arithmetic, NaN payloads kept (no quieting)."""
    h = codes.astype(np.uint32)
    sign = (h & 0x8000) << 16
    exp = (h >> 10) & 0x1F
    mant = h & 0x3FF
    normal = sign | ((exp + 112) << 23) | (mant << 13)
    special = sign | 0x7F800000 | (mant << 13)
    sub = (mant.astype(np.float64) * 2.0**-24).astype(np.float32).view(np.uint32) | sign
    return np.where(exp == 0, sub, np.where(exp == 0x1F, special, normal)).astype(np.uint32)


@pytest.mark.parametrize("level", ["scalar", "avx2", "avx512"])
def test_float16_decode_every_code_bit_for_bit_on_each_level(level, testhooks):
    import os
    import subprocess
    import sys

    # offsets 0..8 exercise the vector loop's unaligned starts and every tail length
    script = (
        "import sys, numpy as np\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "import dumpcmp_testhooks\n"
        "codes = np.arange(1 << 16, dtype=np.uint16)\n"
        "for k in range(9):\n"
        "    values = dumpcmp_testhooks.to_float32('FLOAT16', codes[k:].view(np.uint8), codes.size - k)\n"
        "    sys.stdout.buffer.write(values.tobytes())\n"
    )
    env = dict(os.environ, DUMPCMP_SIMD=level)
    hooks = os.path.dirname(testhooks.__file__)
    out = subprocess.run([sys.executable, "-c", script, hooks], env=env, capture_output=True, check=True).stdout
    codes = np.arange(1 << 16, dtype=np.uint16)
    expected = np.concatenate([_float16_bits_reference(codes[k:]) for k in range(9)])
    np.testing.assert_array_equal(np.frombuffer(out, np.uint32), expected)


def test_simd_level_can_be_lowered_not_raised():
    import os
    import subprocess
    import sys

    order = ["scalar", "avx2", "avx512"]
    best = core.simd_level()
    assert best in order
    for wanted in order:
        env = dict(os.environ, DUMPCMP_SIMD=wanted)
        script = "from dumpcmp.support.native import core; print(core.simd_level())"
        got = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                             check=True).stdout.split()[-1]
        assert got == order[min(order.index(wanted), order.index(best))]
