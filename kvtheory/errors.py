"""The one error type that the command line turns into a one-line message and exit status 2."""


class InputError(ValueError):
    """Bad input: a malformed workload, an impossible budget, an unknown name.

    The message is one line that says what is wrong and where (file and line when there is one).
    """


def require(condition: bool, message: str) -> None:
    """Raise :class:`InputError` with ``message`` unless ``condition`` holds."""
    if not condition:
        raise InputError(message)
