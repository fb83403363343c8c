"""Checks the torch tests share (each test file runs as a script, so this directory is on sys.path)."""


def expect_error(fn, *needles):
    """Calls fn, which must raise a RuntimeError whose text holds every needle; returns that text."""
    try:
        fn()
    except RuntimeError as e:
        msg = str(e)
        for s in needles:
            assert s in msg, f"{s!r} not in: {msg}"
        return msg
    raise AssertionError(f"no error; wanted one with {needles}")
