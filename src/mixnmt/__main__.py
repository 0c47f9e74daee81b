import sys

from mixnmt.cli import main

sys.exit(main())
