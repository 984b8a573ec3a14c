import sys

from hermes.cli.main import main

sys.exit(main())
