import toolwire


def test_all_is_sorted():
    assert toolwire.__all__ == sorted(toolwire.__all__)


def test_all_names_every_public_member():
    public = {name for name in vars(toolwire) if not name.startswith("_")}
    modules = {"envelopes", "errors", "modes", "pipeline", "policy", "schema", "tools", "filters"}
    assert public - modules == set(toolwire.__all__)
