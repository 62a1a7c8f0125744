from dumpcmp.cli.dispatch import run

run()
