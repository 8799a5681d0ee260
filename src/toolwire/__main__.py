"""`python -m toolwire`: the `toolwire` command (`toolwire.cli`)."""

from .cli import main

raise SystemExit(main())
