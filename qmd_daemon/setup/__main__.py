"""`python -m qmd_daemon.setup`: the installer (what install.sh and install.ps1 run)."""

import sys

from qmd_daemon.setup.installer import main

sys.exit(main())
