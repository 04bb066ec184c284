import sys

from bbrlcore.cli import main

sys.exit(main())
