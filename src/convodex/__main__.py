"""The console script and ``python -m convodex``: a short command asks a running
service first (``warm/client.py``, the standard library only), an ``index`` with
nothing to do answers without click (``cli/noop_index.py``); everything else, and
every fallback, runs the click CLI in this process."""

import sys


def main() -> None:
    from convodex.warm.client import answer

    code = answer(sys.argv[1:])
    if code is None and sys.argv[1:2] == ["index"]:
        from convodex.cli.noop_index import answer as noop

        code = noop(sys.argv[2:])
    if code is not None:
        raise SystemExit(code)
    from convodex.cli.main import main as cli

    cli()


if __name__ == "__main__":
    main()
