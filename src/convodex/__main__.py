"""The console script and ``python -m convodex``: a short command asks a running
service first (``warm/client.py``, the standard library only), an ``index`` with
nothing to do answers without click (``cli/noop_index.py``), and so does a recall
hook no service answered (``cli/plain_recall.py``: importing click was half its time);
everything else, and every fallback, runs the click CLI in this process."""

import sys


def main() -> None:
    from convodex.warm.client import answer

    code = answer(sys.argv[1:])
    if code is None and sys.argv[1:2] == ["index"]:
        from convodex.cli.noop_index import answer as noop

        code = noop(sys.argv[2:])
    if code is None and sys.argv[1:2] == ["recall"]:
        from convodex.cli.plain_recall import answer as hook

        code = hook(sys.argv[2:])
    if code is not None:
        raise SystemExit(code)
    from convodex.cli.main import main as cli

    cli()


if __name__ == "__main__":
    main()
