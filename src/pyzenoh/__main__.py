from pyzenoh.cli import main

raise SystemExit(main())
