from dumpcmp.cli import run

run()
