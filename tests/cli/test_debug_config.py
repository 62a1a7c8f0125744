"""`dumpcmp debug-config new|check`: SigmaStar's DebugConfig.txt as the SDK user guide gives it (a switch a line, '#'
in front: off, `path=` absolute and at most 122 bytes), written from options and read back by the checker."""

from __future__ import annotations

import os

import pytest

from dumpcmp.cli import main
from dumpcmp.device.debugconfig import check_debug_config
from dumpcmp.errors import ConfigError

GUIDE = "dumpTensor \neliminateGarbage \ndequantFixed \n#dumpasstring \n#disableDomainFuseOps \npath=\n"


def test_the_guide_s_example_is_valid(tmp_path, capsys):
    f = tmp_path / "DebugConfig.txt"
    f.write_text(GUIDE)  # the user guide's text, trailing spaces included
    c = check_debug_config(f)
    assert c.switches == {"dumpTensor": True, "eliminateGarbage": True, "dequantFixed": True, "dumpasstring": False,
                          "disableDomainFuseOps": False, "dumpdonotrecovery": False}
    assert c.path is None
    assert c.warnings == [f"{f}:6: warning: no path: the simulator writes to $HOME"]
    assert main(["debug-config", "check", str(f)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == f"{f}: valid: on: dumpTensor, eliminateGarbage, dequantFixed; path: $HOME"


def test_new_defaults_flags_and_path(tmp_path, capsys, monkeypatch):
    out = tmp_path / "DebugConfig.txt"
    assert main(["debug-config", "new", "--path", str(tmp_path), "-o", str(out)]) == 0
    assert out.read_text().splitlines() == ["dumpTensor", "eliminateGarbage", "dequantFixed", "#dumpasstring",
                                            "#disableDomainFuseOps", f"path={tmp_path}"]
    assert main(["debug-config", "check", str(out)]) == 0
    assert capsys.readouterr().out.splitlines()[-1].endswith(f"path: {tmp_path}")
    # with flags: exactly those on
    assert main(["debug-config", "new", "--dump-tensor", "--dump-as-string", "--disable-domain-fuse-ops",
                 "--path", str(tmp_path), "-o", "-"]) == 0
    assert capsys.readouterr().out.splitlines() == ["dumpTensor", "#eliminateGarbage", "#dequantFixed",
                                                    "dumpasstring", "disableDomainFuseOps", f"path={tmp_path}"]
    # a relative path is made absolute
    monkeypatch.chdir(tmp_path)
    assert main(["debug-config", "new", "--path", "d", "-o", "-"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"path={tmp_path / 'd'}"
    # never over an existing file without --force
    before = out.read_text()
    assert main(["debug-config", "new", "--dequant-fixed", "-o", str(out)]) == 2
    assert "already exists" in capsys.readouterr().err
    assert out.read_text() == before
    assert main(["debug-config", "new", "--dequant-fixed", "-o", str(out), "--force"]) == 0
    assert out.read_text().startswith("#dumpTensor\n")
    # path limit: 122 bytes
    assert main(["debug-config", "new", "--path", "/" + "a" * 121, "-o", "-"]) == 0
    capsys.readouterr()
    assert main(["debug-config", "new", "--path", "/" + "a" * 122, "-o", "-"]) == 2
    assert "123 bytes" in capsys.readouterr().err


def test_warnings(tmp_path, capsys):
    f = tmp_path / "c.txt"
    f.write_text("#dumpTensor\r\ndumpasstring\r\npath=/no/such/folder/here\r\n")
    c = check_debug_config(f)
    assert [w.split(": warning: ")[0] for w in c.warnings] == [f"{f}:1", f"{f}:3", f"{f}:1", f"{f}:2"]
    assert "Windows line ends" in c.warnings[0] and "not a folder here" in c.warnings[1]
    assert "dumps nothing" in c.warnings[2] and "auto_dump_debug.sh" in c.warnings[3]
    assert c.path == "/no/such/folder/here"
    assert main(["debug-config", "check", str(f)]) == 0


@pytest.mark.parametrize("text,line,words", [
    ("dumpTensor\ndumptensor\n", 2, "unknown switch 'dumptensor' (the simulator ignores it); did you mean "
                                    "'dumpTensor'?"),
    ("dumpTensr\n", 1, "did you mean 'dumpTensor'?"),
    ("dumpTensor\nfoo bar\n", 2, "unknown switch 'foo bar'"),
    ("dumpTensor\n#dumpTensor\n", 2, "dumpTensor given again (first on line 1)"),
    ("path=/a\npath=/b\n", 2, "path= given again (first on line 1)"),
    ("path=home/user\n", 1, "path 'home/user' is not absolute"),
    ("\n\npath=/" + "x" * 200 + "\n", 3, "path is 201 bytes; the simulator takes at most 122"),
    ("dumpTensor\n\xff\n", 2, "not UTF-8"),
    ("dumpTensor\nab\0c\n", 2, "a NUL byte"),
])
def test_errors_name_file_and_line(tmp_path, capsys, text, line, words):
    f = tmp_path / "DebugConfig.txt"
    f.write_bytes(text.encode("latin-1"))
    with pytest.raises(ConfigError) as caught:
        check_debug_config(f)
    assert str(caught.value).startswith(f"{f}:{line}: ") and words in str(caught.value), str(caught.value)
    assert main(["debug-config", "check", str(f)]) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and words in captured.err and captured.out == ""


def test_comments_and_commented_typos_are_fine(tmp_path):
    f = tmp_path / "c.txt"
    f.write_text("# my settings\n#dumpTensr\ndumpTensor\n  \n\t#  note\npath=/tmp\n")
    c = check_debug_config(f)
    assert c.switches["dumpTensor"] and c.path == "/tmp" and c.warnings == []


def test_not_files(tmp_path, capsys):
    for target, words in [(tmp_path / "absent.txt", "cannot read"), (tmp_path, "not a regular file")]:
        assert main(["debug-config", "check", str(target)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and words in err and str(target) in err
    big = tmp_path / "big.txt"
    big.write_text("#" + "x" * 70000 + "\n")
    assert main(["debug-config", "check", str(big)]) == 2
    assert "a DebugConfig.txt is a few lines" in capsys.readouterr().err
    os.mkfifo(tmp_path / "fifo")
    assert main(["debug-config", "check", str(tmp_path / "fifo")]) == 2  # no hang on a FIFO without a writer
    assert "not a regular file" in capsys.readouterr().err
