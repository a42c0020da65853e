"""``python -m azt``: the ``azt`` command line (see :mod:`azt.cli`).

Example::

    $ python -m azt tables list --connection-string "UseDevelopmentStorage=true"
"""

import sys

from azt.cli import main

if __name__ == "__main__":
    sys.exit(main())
