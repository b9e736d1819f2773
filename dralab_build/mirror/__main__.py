"""python -m dralab_build.mirror: see dralab_build/mirror/cli.py."""

import sys

from dralab_build.mirror.cli import main

sys.exit(main())
