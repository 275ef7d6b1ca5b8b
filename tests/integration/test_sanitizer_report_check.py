"""The report check of tests/conftest.py's ServerProcess.stop(): under ASan, g++'s UBSan writes its
reports to the server's stderr only (never to log_path), so the integration suite run against a
sanitized server (scripts/test-sanitizers.sh) sees them only through this check. A process that
prints what a sanitized server prints stands in for the server: the check is what is tested."""
import select
import subprocess

import pytest

from conftest import ServerProcess


def started(tmp_path, script):
    s = ServerProcess(tmp_path)
    s.proc = subprocess.Popen(["sh", "-c", script], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    return s


def test_stop_fails_when_the_server_printed_a_ubsan_report(tmp_path):
    s = started(tmp_path, "echo 'src/server/x.cc:7:9: runtime error: signed integer overflow' >&2;"
                          " exec sleep 30")
    # The report is in the pipe (not consumed) before the stop: no race with the SIGTERM.
    assert select.select([s.proc.stderr], [], [], 30)[0]
    with pytest.raises(AssertionError, match="runtime error: signed integer overflow"):
        s.stop()


def test_stop_keeps_a_clean_server_log_readable(tmp_path):
    s = started(tmp_path, "echo 'cohort server: listening' >&2")
    s.proc.wait()
    assert s.stop() == 0
    assert s.proc.stderr.read() == "cohort server: listening\n"
    assert s.stop() == 0  # a second stop reads nothing twice and raises nothing
