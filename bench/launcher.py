"""A bare process that runs one command and reports that command's own wall time and
peak resident memory, as `/usr/bin/time -f "%e %M"` does. `bench/measure.py` runs
every measured command through it.

    python -I -S bench/launcher.py REPORT COMMAND [ARG ...]

REPORT gets one line, `SECONDS MAX_RSS_KB CPU_SECONDS`: from the command's start to its
end, the largest resident set of the command or of any child it waited for, and the
CPU time (user and system) of the command and the children it waited for: on a
machine shared with other work, wall time grows with the load, CPU time much less. The exit
status is the command's (128 + N when signal N ended it).

Why a process of its own: on Linux a child starts from its parent's high-water mark
and `exec` keeps it, so a command spawned by the bench itself reports at least the
bench's own peak. This process inherits that mark too, but a child it spawns has a
mark of its own, starting from this process's few megabytes: hence `-I -S` and
nothing imported but `os`, `sys` and `time`.
"""

import os
import sys
import time


def main(report: str, command: list[str]) -> int:
    start = time.perf_counter()
    pid = os.posix_spawnp(command[0], command, os.environ)
    _, status, usage = os.wait4(pid, 0)
    seconds = time.perf_counter() - start
    with open(report, "w") as file:
        cpu = usage.ru_utime + usage.ru_stime
        file.write(f"{seconds} {usage.ru_maxrss} {cpu}\n")
    code = os.waitstatus_to_exitcode(status)
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1], sys.argv[2:]))
