from kimi_cli.entry import main

main()
