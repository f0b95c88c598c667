from webtrawl.cli import main

raise SystemExit(main())
