"""Run a command and write its peak resident memory to a file, from a small process.

    python peak.py OUT.json COMMAND [ARG ...]

Linux starts a child's ``ru_maxrss`` at the resident size of the process it was forked from
(the copy it exec'd from counts), so a harness that had loaded a model would read that model
in every labeling it times. Forked from this small process instead, a command's peak is its
own (plus this interpreter's few MiB, a floor far below any labeling's). Its exit status is
the command's (128 + N for a signal N); stdin, stdout and stderr are its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys


def main(argv: list[str]) -> int:
    out, command = argv[0], argv[1:]
    proc = subprocess.Popen(command)
    _, status, usage = os.wait4(proc.pid, 0)
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"peak_rss_kib": usage.ru_maxrss}, f)
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
