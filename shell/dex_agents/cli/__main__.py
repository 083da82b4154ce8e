"""``python -m dex_agents.cli``: the ``dex-agents`` command line."""

import sys

from dex_agents.cli.main import main

sys.exit(main())
