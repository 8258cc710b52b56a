"""``python -m elegantrl``: train an agent from the shell (see ``--help``)."""

import sys

from elegantrl.run import main

sys.exit(main())
