from mlagent_tui.cli import main

main()
