from specnet.cli import main

main()
