from mlagent_tui.cli.main import main

main()
