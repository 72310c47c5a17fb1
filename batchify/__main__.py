import sys

from batchify.cli import main

sys.exit(main())
