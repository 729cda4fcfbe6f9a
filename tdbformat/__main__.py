from tdbformat.cli import main
raise SystemExit(main())
