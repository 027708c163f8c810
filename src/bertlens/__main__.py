import sys

from bertlens.cli.main import main

sys.exit(main())
