from convodex.cli import main

main()
