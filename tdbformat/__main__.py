"""``python -m tdbformat``: the command line (:func:`tdbformat.cli.main`)."""

import sys

from .cli import main

sys.exit(main())
