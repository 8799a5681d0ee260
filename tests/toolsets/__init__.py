"""The toolset contract suite (a package: `store/` has a `test_contract.py` too)."""
