"""What the package's own threads do first: block the asynchronous signals, so that the kernel
hands a SIGTERM or SIGINT sent to the process to one of the program's threads. Python runs its
signal handlers on the main thread only, and a signal delivered to another thread leaves a main
thread asleep in time.sleep() unwoken until the sleep ends (the native client's threads do the
same: src/core/thread_signals.h)."""
import signal

_ASYNC_SIGNALS = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT",
                                                      "SIGUSR1", "SIGUSR2", "SIGALRM")
                       if hasattr(signal, n))


def quiet_thread() -> None:
    """Called first on a thread the package starts: blocks the asynchronous signals there."""
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_BLOCK, _ASYNC_SIGNALS)
