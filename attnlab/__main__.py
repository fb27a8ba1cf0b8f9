"""`python -m attnlab ...` (and `torchrun -m attnlab train ...`) run the `attnlab` command."""

import sys

from attnlab.cli import main

sys.exit(main())
