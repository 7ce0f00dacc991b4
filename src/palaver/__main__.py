from palaver.cli import main

raise SystemExit(main())
