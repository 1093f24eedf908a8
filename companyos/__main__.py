import sys

from companyos.cli import main

sys.exit(main())
