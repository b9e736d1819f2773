"""python -m dralab_build.binaries: see dralab_build/binaries/cli.py."""

import sys

from dralab_build.binaries.cli import main

sys.exit(main())
