"""``python -m roadkit_client serve --config FILE``."""

import sys

from .cli import main

sys.exit(main())
