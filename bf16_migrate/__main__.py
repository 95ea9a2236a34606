"""``python -m bf16_migrate ...``: the same command line as the ``bf16-migrate`` script
(:func:`bf16_migrate.cli.main`), for an environment whose scripts folder is not on ``PATH``."""

from .cli import main

if __name__ == "__main__":
    main()
