"""Process-wide state of the cohort package: the current run, the live runs, and the hooks
that end them with the right exit code whatever way the process ends.

- normal exit: an ``atexit`` handler finishes live runs with the exit code: the one given to
  ``sys.exit`` or the builtins ``exit``/``quit`` in the main thread (wrapped to record it), 1
  after an uncaught exception (``sys.excepthook``, chained), 130 and state killed after an
  uncaught KeyboardInterrupt. Python gives an ``atexit`` handler no exit status, and a
  ``SystemExit`` that reaches the top is handled before ``sys.excepthook`` and cleared before
  ``atexit`` runs, so a ``raise SystemExit(n)`` written out is invisible; what the handler
  can see is how the main thread's outermost frame (the script's module, runpy's
  ``_run_module_as_main``) ended (``_main_outcome``): returned (exit status 0, whatever
  ``sys.exit`` calls were caught on the way) or left by an exception. One that left it with
  nothing recorded is such a ``SystemExit``: its code is unknown, the run is finished with 0
  and a warning says why;
- SIGTERM: the writers end as killed (exit code 143), then the previous handler runs (the
  default one re-raises the signal so the process still dies of it);
- multiprocessing children (fork or spawn) end through ``multiprocessing.util`` finalizers, not
  ``atexit``: a finalizer registered after each fork ends the child's writers with the
  child's exit status (the exception leaving ``Process.run``, if any);
- ``fork()``: the client library gives a forked child that logs its own connection and writer
  (label ``<parent label>-<pid>``); here the child simply knows the inherited runs are not its
  own (``Run._pid`` differs), so ``cohort.init()`` in that child returns the inherited run
  instead of finishing it.

A Run unpickled in another process (``_run.restore_run``) joins the same run as a worker
writer, labelled ``<parent label>-<pid>``; ``cohort.init()`` there returns it.

This module imports no other module of the package that imports it back: it knows runs only
through what ``LiveRun`` names (``cohort.Run`` in ``_run.py`` has all of it).
"""
from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
import weakref
from typing import Any, Callable, List, Optional, Protocol, Tuple

from ._synced import Config, Summary
from .errors import UsageError


class _Detached:
    """``cohort.config`` / ``cohort.summary`` while there is no current run (before ``init``,
    after ``finish``): reads find nothing, every write raises (it would be lost), as the seed's
    SDK does."""

    _what: str

    def _refuse(self, statement: str) -> UsageError:
        """The error for a write; ``statement`` shows it with ``{}`` for ``cohort.config``."""
        name = f"cohort.{self._what}"
        statement = statement.replace("{}", name, 1)
        return UsageError(f"{statement}: no run; call cohort.init() before "
                          f"writing {name} (or write the run's own run.{self._what})")

    def _set_many(self, changes: Any) -> None:
        raise self._refuse("{}.update(...)")

    def __setitem__(self, key: str, value: Any) -> None:
        raise self._refuse("{}[%r] = ..." % (key,))

    def __delitem__(self, key: str) -> None:
        raise self._refuse("del {}[%r]" % (key,))

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_"):
            object.__setattr__(self, name, value)
        else:
            raise self._refuse("{}.%s = ..." % name)

    def update(self, *args: Any, **kwargs: Any) -> None:
        raise self._refuse("{}.update(...)")

    def setdefaults(self, *args: Any, **kwargs: Any) -> None:
        raise self._refuse("{}.setdefaults(...)")

    def setdefault(self, key: str, default: Any = None) -> Any:
        raise self._refuse("{}.setdefault(...)")

    def __reduce__(self):
        return (type(self), ())


class DetachedConfig(_Detached, Config):
    """``cohort.config`` with no current run."""


class DetachedSummary(_Detached, Summary):
    """``cohort.summary`` with no current run."""


class LiveRun(Protocol):
    """What the registry uses of a run (``cohort.Run``)."""

    _pid: int

    @property
    def id(self) -> str: ...

    @property
    def finished(self) -> bool: ...

    @property
    def config(self) -> Config: ...

    @property
    def summary(self) -> Summary: ...

    def _finish_with(self, exit_code: int, state: str) -> None: ...


_lock = threading.RLock()
_live: List[LiveRun] = []          # runs of this process not finished yet (strong references)
_current: Optional[LiveRun] = None  # cohort.run
_adopted: Optional[LiveRun] = None  # a run received from the parent (pickled or forked)
_unpickled: "weakref.WeakValueDictionary[Tuple[str, str], LiveRun]" = weakref.WeakValueDictionary()

_exit_code: Optional[int] = None
_exit_state = ""
_hooks_pid: Optional[int] = None
_prev_excepthook: Optional[Callable[..., Any]] = None
_orig_sys_exit: Optional[Callable[..., Any]] = None
_root_frame: Any = None            # the main thread's outermost frame (see _main_outcome)
_prev_sigterm: Any = None
_sigterm_installed = False


# -- registry ------------------------------------------------------------------------------------
def register(run: LiveRun, make_current: bool = True) -> None:
    """Adds a started run to the live set (and makes it cohort.run)."""
    global _current
    with _lock:
        if run not in _live:
            _live.append(run)
        if make_current:
            _current = run
    if make_current:
        _publish(run)


def forget(run: LiveRun) -> None:
    """Removes a finished run; cohort.run goes back to None when it was the current one."""
    global _current, _adopted
    with _lock:
        if run in _live:
            _live.remove(run)
        was_current = _current is run
        if was_current:
            _current = None
        if _adopted is run:
            _adopted = None
    if was_current:
        _publish(None)


def live() -> List[LiveRun]:
    with _lock:
        return list(_live)


def current() -> Optional[LiveRun]:
    return _current


def _publish(run: Optional[LiveRun]) -> None:
    """Sets the module attributes cohort.run, cohort.config and cohort.summary."""
    package = sys.modules.get(__name__.rpartition(".")[0])
    if package is None:
        return
    package.run = run
    package.config = run.config if run is not None else DetachedConfig()
    package.summary = run.summary if run is not None else DetachedSummary()


def adopted_run(explicit_only: bool = False) -> Optional[LiveRun]:
    """A run this process received from its parent and may return from init(): one passed to
    it (unpickled), else (unless ``explicit_only``) the current run inherited through fork()."""
    run = _adopted
    if run is not None and not run.finished:
        return run
    cur = _current
    if not explicit_only and cur is not None and not cur.finished and cur._pid != os.getpid():
        return cur
    return None


def adopt(run: LiveRun) -> None:
    """Makes ``run`` (inherited from the parent) this process's own."""
    global _adopted
    run._pid = os.getpid()
    with _lock:
        _adopted = None
    register(run)


# -- exit codes ----------------------------------------------------------------------------------
def exit_state_for(exc: Optional[BaseException]) -> Tuple[int, str]:
    """(exit code, forced state) for an exception leaving a run's scope or the process."""
    if exc is None:
        return 0, ""
    if isinstance(exc, SystemExit):
        code = exc.code
        if code is None:
            return 0, ""
        if isinstance(code, bool) or not isinstance(code, int):
            return 1, ""
        return code, ""
    if isinstance(exc, KeyboardInterrupt):
        return 130, "killed"
    return 1, ""


def finish_all(exit_code: int, state: str = "") -> None:
    """Finishes every live run of this process (in reverse order of start)."""
    for run in reversed(live()):
        try:
            run._finish_with(exit_code, state)
        except Exception as e:  # never let one run keep the others from finishing
            print(f"cohort: finishing run {run.id} failed: {e}", file=sys.stderr)


def _record_exit(code: Any) -> None:
    global _exit_code, _exit_state
    if threading.current_thread() is not threading.main_thread():
        return  # sys.exit in another thread ends that thread only, not the process
    _check_root_frame()
    _exit_code, _exit_state = exit_state_for(SystemExit(code))


def _sys_exit(code: Any = None) -> None:
    _record_exit(code)
    assert _orig_sys_exit is not None
    _orig_sys_exit(code)


class _Quitter:
    """``exit``/``quit`` of ``site`` (the builtins), recording their code like ``sys.exit``."""

    def __init__(self, orig: Any) -> None:
        self._orig = orig

    def __repr__(self) -> str:
        return repr(self._orig)

    def __call__(self, code: Any = None) -> None:
        _record_exit(code)
        self._orig(code)


def _excepthook(exc_type: Any, exc: Any, tb: Any) -> None:
    global _exit_code, _exit_state
    _check_root_frame(at_top=True)
    _exit_code, _exit_state = exit_state_for(exc if exc is not None else exc_type())
    hook = _prev_excepthook or sys.__excepthook__
    hook(exc_type, exc, tb)


# How the program's main frame ended. An atexit handler is not told the exit status, and a
# SystemExit reaching the top (``raise SystemExit(3)``) calls no hook: CPython reads its code
# before sys.excepthook would be called and clears it before atexit. The main thread's
# outermost frame tells whether the program returned (status 0) or an exception left it.
def _outermost(frame: Any) -> Any:
    while frame.f_back is not None:
        frame = frame.f_back
    return frame


def _capture_root_frame() -> None:
    """Remembers the main thread's outermost frame (once per process)."""
    global _root_frame
    try:
        if threading.current_thread() is threading.main_thread():
            frame = sys._getframe(0)
        else:
            frame = sys._current_frames().get(threading.main_thread().ident)
        _root_frame = _outermost(frame) if frame is not None else None
    except Exception:  # no frame introspection (another implementation): the recorded codes
        _root_frame = None


def _check_root_frame(at_top: bool = False) -> None:
    """Forgets the remembered frame when the main thread runs outside it: an embedding
    application that calls into Python again after the first call returned (how that call
    ended says nothing about how the process ends), a child forked from another thread.
    ``at_top``: sys.excepthook, which the interpreter calls after the frame ended (it is
    forgotten only if it returned: then the exception came from a later call)."""
    global _root_frame
    root = _root_frame
    if root is None or threading.current_thread() is not threading.main_thread():
        return
    try:
        if _outermost(sys._getframe(0)) is root:
            return
        if at_top and _main_outcome() != "returned":
            return
    except Exception:
        pass
    _root_frame = None


_RETURNS: Optional[Tuple[int, ...]] = None


def _main_outcome() -> Optional[str]:
    """"returned" when the main frame ended by returning, "raised" when an exception left it,
    None when this is not known (no frame remembered, or it is still running)."""
    global _RETURNS
    root = _root_frame
    if root is None:
        return None
    try:
        main = sys._current_frames().get(threading.main_thread().ident)
        if main is not None and _outermost(main) is root:
            return None  # still running: atexit's callbacks run by hand, os.fork child...
        if _RETURNS is None:
            import opcode
            _RETURNS = tuple(opcode.opmap[name] for name in ("RETURN_VALUE", "RETURN_CONST")
                             if name in opcode.opmap)
        lasti = root.f_lasti
        code = root.f_code.co_code
        if lasti < 0 or lasti >= len(code):
            return None
        return "returned" if code[lasti] in _RETURNS else "raised"
    except Exception:
        return None


_unseen_warned = False


def _warn_unseen_exit() -> None:
    global _unseen_warned
    if _unseen_warned:
        return
    _unseen_warned = True
    print("cohort: the program ended by a SystemExit no hook sees (`raise SystemExit(...)` "
          "written out): its exit status is unknown, the run is finished with exit code 0; "
          "use sys.exit(code) or run.finish(exit_code=code) to record it", file=sys.stderr)


def exit_status() -> Tuple[int, str]:
    """(exit code, forced state) the atexit handler finishes the live runs with."""
    outcome = _main_outcome()
    if outcome == "returned":
        return 0, ""  # sys.exit() calls caught on the way, sys.excepthook called by hand
    if _exit_code is None:
        if outcome == "raised":
            # An uncaught exception whose sys.excepthook was replaced after init() without
            # chaining (rich.traceback.install(), ...): CPython keeps it in sys.last_value (and
            # sys.last_exc) before calling the hook, never a SystemExit.
            last = getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)
            if isinstance(last, BaseException) and not isinstance(last, SystemExit):
                return exit_state_for(last)
            _warn_unseen_exit()
        return 0, _exit_state
    return _exit_code, _exit_state


def _atexit() -> None:
    if not _live:
        return
    code, state = exit_status()
    finish_all(code, state)


def _on_sigterm(signum: int, frame: Any) -> None:
    finish_all(128 + signum, "killed")
    prev = _prev_sigterm
    if callable(prev):
        prev(signum, frame)
        return
    if prev == signal.SIG_IGN:
        return
    # The default action: die of the signal, as the process would have without us.
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _install_sigterm() -> None:
    global _prev_sigterm, _sigterm_installed
    if _sigterm_installed or threading.current_thread() is not threading.main_thread():
        return
    try:
        prev = signal.getsignal(signal.SIGTERM)
        if prev == signal.SIG_IGN:
            return
        signal.signal(signal.SIGTERM, _on_sigterm)
    except (ValueError, OSError):  # not the main interpreter, or signals unavailable
        return
    _prev_sigterm = prev
    _sigterm_installed = True


# -- fork and multiprocessing --------------------------------------------------------------------
def _after_fork_child() -> None:
    global _exit_code, _exit_state
    _exit_code, _exit_state = None, ""
    _check_root_frame()  # forked from another thread: the child's only thread runs other frames
    _unpickled.clear()
    _ensure_mp_hook()  # a multiprocessing child runs its after-fork hooks after this


def _mp_child_exit() -> None:
    """Runs in a multiprocessing child as it ends (inside Process._bootstrap's finally)."""
    exc = sys.exc_info()[1]
    code, state = exit_state_for(exc)
    finish_all(code, state)


class _MpToken:
    """multiprocessing.util.register_after_fork needs a weak-referenceable object."""


_mp_token = _MpToken()


def _mp_after_fork(_token: Any) -> None:
    import multiprocessing.util as mp_util
    mp_util.Finalize(None, _mp_child_exit, exitpriority=100)


_mp_hooked = False


def _ensure_mp_hook() -> None:
    """Registers _mp_after_fork with multiprocessing once it is loaded (importing it here would
    cost a fresh process tens of milliseconds at init())."""
    global _mp_hooked
    if _mp_hooked:
        return
    mp_util = sys.modules.get("multiprocessing.util")
    if mp_util is None:
        return
    mp_util.register_after_fork(_mp_token, _mp_after_fork)
    _mp_hooked = True


def install_hooks() -> None:
    """Installs the exit, signal and fork hooks, once per process (main thread for SIGTERM)."""
    global _hooks_pid, _prev_excepthook, _orig_sys_exit
    with _lock:
        if _hooks_pid is None:
            atexit.register(_atexit)
            _capture_root_frame()
            _prev_excepthook = sys.excepthook
            sys.excepthook = _excepthook
            _orig_sys_exit = sys.exit
            sys.exit = _sys_exit
            import builtins
            for name in ("exit", "quit"):
                orig = getattr(builtins, name, None)
                if orig is not None and not isinstance(orig, _Quitter):
                    setattr(builtins, name, _Quitter(orig))
            if hasattr(os, "register_at_fork"):
                os.register_at_fork(after_in_child=_after_fork_child)
        _hooks_pid = os.getpid()
        _ensure_mp_hook()
    _install_sigterm()


# -- runs handed to other processes -------------------------------------------------------------
def unpickled(key: Tuple[str, str]) -> Optional[LiveRun]:
    """The unfinished run this process already restored for (run id, label), if any."""
    with _lock:
        run = _unpickled.get(key)
        return run if run is not None and not run.finished else None


def note_unpickled(key: Tuple[str, str], run: LiveRun) -> None:
    """Records a run restored from a pickle; init() returns it (the first one unfinished)."""
    global _adopted
    with _lock:
        _unpickled[key] = run
        if _adopted is None or _adopted.finished:
            _adopted = run
