from inspect import ismodule

import toolwire


def test_all_is_sorted():
    assert toolwire.__all__ == sorted(toolwire.__all__)


def test_all_names_every_public_member():
    public = {name for name, value in vars(toolwire).items() if not name.startswith("_") and not ismodule(value)}
    assert public == set(toolwire.__all__)
