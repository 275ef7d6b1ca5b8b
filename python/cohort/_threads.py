"""What the package's own threads do first: block the asynchronous signals, so that the kernel
hands a SIGTERM or SIGINT sent to the process to one of the program's threads. Python runs its
signal handlers on the main thread only, and a signal delivered to another thread leaves a main
thread asleep in time.sleep() unwoken until the sleep ends (the native client's threads do the
same, with the one list: src/core/thread_signals.h, which the extension hands here)."""
import signal

from ._native import native

# () with an extension built before the list was exposed (a source checkout on an older build
# tree): nothing blocked, rather than a worker thread that dies.
_ASYNC_SIGNALS = tuple(getattr(native, "ASYNC_SIGNALS", ()))


def quiet_thread() -> None:
    """Called first on a thread the package starts: blocks the asynchronous signals there."""
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_BLOCK, _ASYNC_SIGNALS)
