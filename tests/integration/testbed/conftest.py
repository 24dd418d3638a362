"""The DRA bed of test_dra*.py, the session fixture ``dra``, lives in tests/integration/conftest.py: the DRA specs of
other directories (tests/integration/dra/) share the same bed."""
