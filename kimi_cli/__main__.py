from kimi_cli.cli import main

main()
