from webtrawl.testweb.serve import main

raise SystemExit(main())
