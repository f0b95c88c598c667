from webtrawl_testweb.serve import main

raise SystemExit(main())
