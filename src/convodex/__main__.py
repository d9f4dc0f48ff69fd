from convodex.warm.client import main

main()
