"""The command line's parser: the one built for a single sub-command (what a run uses) takes the same options as
the whole parser, and everything that needs every sub-command (help, a wrong name) still sees them all."""

import pytest

from dumpcmp.cli import COMMANDS, build_parser, main


def _subparser(parser, name):
    action = next(a for a in parser._actions if a.dest == "command")
    return action.choices[name]


def _options(subparser):
    return sorted((tuple(a.option_strings), a.dest, repr(a.default), a.required, a.nargs)
                  for a in subparser._actions)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_parser_built_for_one_command_takes_its_options_unchanged(name):
    whole, narrow = build_parser(), build_parser(name)
    assert _options(_subparser(narrow, name)) == _options(_subparser(whole, name))
    assert _subparser(narrow, name).format_help() == _subparser(whole, name).format_help()
    assert _subparser(narrow, name).prog == _subparser(whole, name).prog == f"dumpcmp {name}"


def test_a_run_parses_with_the_narrow_parser(tmp_path, capsys):
    assert main(["compare", "-l", str(tmp_path / "missing"), "-r", str(tmp_path)]) == 2
    assert "missing" in capsys.readouterr().err


def test_help_and_wrong_names_still_list_every_command(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--help"])
    assert stop.value.code == 0
    text = capsys.readouterr().out
    assert all(name in text for name in COMMANDS)
    with pytest.raises(SystemExit) as stop:
        main(["no-such-command"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'no-such-command'" in err and all(f"'{name}'" in err for name in COMMANDS)
