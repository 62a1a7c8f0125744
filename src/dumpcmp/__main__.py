from dumpcmp.cli.main import run

run()
