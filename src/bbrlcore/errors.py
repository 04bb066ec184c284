"""User-facing errors: one clear line naming the file, key or parameter at fault."""


class BBRLError(Exception):
    """An error caused by bad input (file, parameter, configuration).

    The command line prints ``bbrl: error: <message>`` and exits with status 2; the
    message must name what is wrong (the file, key or parameter) on one line.
    """
