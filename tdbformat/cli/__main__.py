"""``python -m tdbformat.cli``, as before ``python -m tdbformat``."""

import sys

from . import main

sys.exit(main())
