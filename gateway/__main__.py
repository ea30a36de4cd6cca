"""``python -m gateway`` = ``elicitation-gateway``."""

import sys

from gateway.cli.main import main

sys.exit(main())
