"""``python -m seqrep`` runs the command line (also what ``accelerate launch -m seqrep`` uses)."""

from seqrep.cli.app import main

main()
