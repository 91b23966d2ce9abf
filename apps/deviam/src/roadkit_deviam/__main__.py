"""``python -m roadkit_deviam serve --config FILE``."""

import sys

from .cli import main

sys.exit(main())
