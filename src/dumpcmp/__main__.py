from dumpcmp.cli import main

raise SystemExit(main())
