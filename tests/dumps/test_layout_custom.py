"""User format converters (`-custom DIR`): override built-ins, and broken plug-ins get errors naming the file."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dumpcmp.dumps import layout as L
from dumpcmp.errors import ConfigError


def plugin(tmp_path, name, body):
    folder = tmp_path / "format_convert"
    folder.mkdir(exist_ok=True)
    path = folder / f"convert_{name}.py"
    path.write_text(body)
    return path


def test_user_converter_overrides_builtin(tmp_path):
    plugin(tmp_path, "NC1HWC0_to_NCHW", (
        "import numpy as np\n"
        "def convert(shape_from, shape_to, array):\n"
        "    assert array.ndim == 1\n"
        "    return np.full(int(np.prod(shape_to)), len(shape_from), dtype=array.dtype)\n"))
    dev = np.arange(2 * 1 * 3 * 3 * 16, dtype=np.float32).reshape(2, 1, 3, 3, 16)
    got = L.convert(dev, "NC1HWC0", "NCHW", original_shape=(2, 5, 3, 3), custom=tmp_path)
    assert got.shape == (2, 5, 3, 3)  # a 1-D result is reshaped to the target shape
    assert (got == 5).all()  # shape_from had 5 dims: the user's function ran, not the codec
    # other pairs still use the codec
    conv = L.Converters(tmp_path)
    assert conv.pairs() == [("NC1HWC0", "NCHW")]
    back = L.convert(np.ones((2, 5, 3, 3), np.float32), "NCHW", "NC1HWC0", custom=conv)
    assert back.shape == (2, 1, 3, 3, 16) and back[:, :, :, :, :5].all() and not back[..., 5:].any()


def test_user_converter_for_a_pair_the_codec_lacks(tmp_path):
    plugin(tmp_path, "C1HWNCoC0_to_NCHW", (
        "def convert(shape_from, shape_to, array):\n"
        "    return array.reshape(shape_from)[:, 0, 0, 0, 0, :].reshape(1, -1, 1, 1)\n"))
    src = np.arange(2 * 3 * 4, dtype=np.int16).reshape(2, 1, 1, 3, 1, 4)
    got = L.convert(src, "C1HWNCoC0", "NCHW", custom=tmp_path)
    np.testing.assert_array_equal(got.ravel(), src[:, 0, 0, 0, 0, :].ravel())


@pytest.mark.parametrize(
    "body, message",
    [
        ("import no_such_module_for_dumpcmp\n", "cannot import the format converter: ModuleNotFoundError"),
        ("def convert(:\n", "cannot import the format converter: SyntaxError"),
        ("x = 1\n", "defines no function convert"),
        ("def convert(a, b, c):\n    raise RuntimeError('boom')\n", r"convert\(\) failed: RuntimeError: boom"),
        ("def convert(a, b, c):\n    return [1, 2]\n", "must return a NumPy array"),
        ("import numpy as np\ndef convert(a, b, c):\n    return np.zeros(7)\n", "returned 7 elements"),
        ("import numpy as np\ndef convert(a, b, c):\n    return np.zeros((10, 3, 3, 1))\n", "returned shape"),
    ],
)
def test_broken_plugins_name_the_file(tmp_path, body, message):
    path = plugin(tmp_path, "NC1HWC0_to_NCHW", body)
    dev = np.zeros((2, 1, 3, 3, 16), np.float32)
    with pytest.raises(ConfigError, match=message) as info:
        L.convert(dev, "NC1HWC0", "NCHW", original_shape=(2, 5, 3, 3), custom=tmp_path)
    assert str(path) in str(info.value)


def test_missing_folder(tmp_path):
    with pytest.raises(ConfigError, match="no format_convert directory"):
        L.convert(np.zeros((1, 3, 2, 2)), "NCHW", "NHWC", custom=tmp_path / "nowhere")


# ---- Hypothesis: encode then decode is the identity for any shape -------------------------------------------------

PAIRS = [("NC1HWC0", "NCHW"), ("NC1HWC0", "NHWC"), ("FRACTAL_Z", "NCHW"), ("FRACTAL_Z", "HWCN"),
         ("NDC1HWC0", "NDHWC"), ("FRACTAL_Z_3D", "NCDHW"), ("FRACTAL_NZ", "ND")]


@settings(max_examples=150, deadline=None)
@given(
    pair=st.sampled_from(PAIRS),
    dims=st.lists(st.integers(1, 37), min_size=5, max_size=5),
    c0=st.sampled_from([4, 8, 16, 32]),
    itemsize=st.sampled_from([1, 2, 4, 8]),
    seed=st.integers(0, 2**32 - 1),
)
def test_round_trip_property(pair, dims, c0, itemsize, seed):
    device, plain = pair
    rank = {"NCHW": 4, "NHWC": 4, "HWCN": 4, "NDHWC": 5, "NCDHW": 5}.get(plain, 1 + seed % 4)
    shape = tuple(dims[:rank])
    if int(np.prod(shape)) > 60000:
        shape = tuple(min(d, 8) for d in shape)
    x = np.random.default_rng(seed).integers(1, 120, size=shape).astype(f"u{itemsize}")
    dev = L.convert(x, plain, device, c0=c0)
    assert dev.shape[-1] == c0
    assert int(dev.astype(np.uint64).sum()) == int(x.astype(np.uint64).sum())  # padding adds only zeros
    np.testing.assert_array_equal(L.convert(dev, device, plain, original_shape=shape), x)
