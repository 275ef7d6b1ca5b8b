"""Verified, resumable, cached downloads of artifact files (docs/python-api.md, "Artifacts").

A file of a version is a blob named by its SHA-256. Its bytes are fetched into the user's blob
cache, ``$COHORT_CACHE_DIR/artifacts/sha256/<2 hex>/<hex>`` (default cache directory
``$XDG_CACHE_HOME/cohort``, else ``~/.cache/cohort``), and copied from there into the download
directory:

- in ranged GETs of ``CHUNK_BYTES`` (8 MiB): no answer is ever larger, and a connection that
  drops costs at most one range, which is asked for again (``RETRIES`` times);
- into ``<hex>.part``, which a later download continues where it stopped (the bytes already
  there are hashed, not fetched again);
- written on a thread of its own past the page cache (``_file_writer.FileWriter``) when
  large; a blob of ``LARGE_COPY_BYTES`` or more fetched from its first byte is written into
  the cache and into the download directory in one pass (not read back from the cache to be
  copied), the copy renamed into place once the bytes are verified;
- checked against the manifest's SHA-256 and size before ``<hex>.part`` is renamed into place:
  bytes that do not match raise ``VerificationError`` and are dropped, no file is made;
- once per blob: a blob in the cache is copied locally, with no request to the server (the
  cache keeps only verified blobs, read-only); the copy is hashed as it is made, and a cached
  blob whose bytes are not the blob's (damaged on disk) is dropped and fetched again;
- through ``<file>.cohort-tmp`` beside each file, renamed into place once verified: one that
  a killed download left is reused by the next download of that file;
- under an advisory lock per blob (``<hex>.lock``), so that processes downloading the same
  blob at once do not write the same ``.part``.

Files are downloaded in parallel by a small thread pool, each thread with its own connection.
A download that takes more than two seconds shows its progress on stderr (a line that updates
on a terminal, a line every 10 s otherwise).
"""
from __future__ import annotations

import fcntl
import hashlib
import http.client
import os
import shutil
import sys
import threading
import time
import urllib.parse
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from typing import Callable, List, Optional, Sequence, Tuple

from ._file_writer import FileWriter, PlainWriter
from .api_http import Transport, Unreachable
from .errors import CommError, Error, UsageError

CHUNK_BYTES = 8 << 20   # one ranged GET (the blob part size of uploads, docs/artifacts.md)
READ_BYTES = 1 << 20    # one read of an answer or a file
RETRIES = 5             # attempts of one range whose connection dropped
DEFAULT_WORKERS = 8
LARGE_COPY_BYTES = 64 << 20  # from here on a blob fetched whole reaches `dest` in the same pass
_PROGRESS_AFTER_S = 2.0


class _Stopped(CommError):
    """A file left unfinished because another one failed."""


class VerificationError(Error):
    """Downloaded bytes do not match the manifest (SHA-256 or size); nothing was kept."""

    code = "data_loss"


def cache_dir() -> str:
    """The user's cohort cache directory: $COHORT_CACHE_DIR, $XDG_CACHE_HOME/cohort or
    ~/.cache/cohort."""
    explicit = os.environ.get("COHORT_CACHE_DIR")
    if explicit:
        return os.path.abspath(os.path.expanduser(explicit))
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = xdg if xdg else os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "cohort")


def blob_cache_path(sha256: str) -> str:
    """Where the blob `sha256` lives in the cache."""
    return os.path.join(cache_dir(), "artifacts", "sha256", sha256[:2], sha256)


def _is_sha256(text: str) -> bool:
    return len(text) == 64 and all(c in "0123456789abcdef" for c in text)


class Progress:
    """Bytes and files done of a download, shown on stderr once it runs longer than 2 s."""

    def __init__(self, what: str, total_bytes: int, total_files: int,
                 enabled: Optional[bool] = None):
        self.what, self.total_bytes, self.total_files = what, total_bytes, total_files
        self.enabled = True if enabled is None else enabled
        self.tty = sys.stderr.isatty()
        self.done_bytes = self.done_files = self.fetched_bytes = 0
        self._lock = threading.Lock()
        self._start = time.monotonic()
        self._last = 0.0
        self._shown = False

    def add(self, nbytes: int = 0, files: int = 0, fetched: bool = True) -> None:
        with self._lock:
            self.done_bytes += nbytes
            self.done_files += files
            if fetched:
                self.fetched_bytes += nbytes
            now = time.monotonic()
            if not self.enabled or now - self._start < _PROGRESS_AFTER_S:
                return
            if now - self._last < (0.5 if self.tty else 10.0):
                return
            self._last = now
            self._print(self._line(now), end="" if self.tty else "\n")

    def rewind(self, nbytes: int) -> None:
        """`nbytes` done so far are to be done again (a bad partial file was dropped)."""
        with self._lock:
            self.done_bytes -= nbytes

    def _line(self, now: float) -> str:
        mib = 1 << 20
        rate = self.fetched_bytes / mib / max(now - self._start, 1e-3)
        return (f"cohort: downloading {self.what}: {self.done_bytes / mib:.1f}/"
                f"{self.total_bytes / mib:.1f} MiB, {self.done_files}/{self.total_files} files,"
                f" {rate:.1f} MiB/s")

    def _print(self, text: str, end: str) -> None:
        prefix = "\r\x1b[2K" if self.tty else ""
        sys.stderr.write(prefix + text + end)
        sys.stderr.flush()
        self._shown = True

    def finish(self) -> None:
        with self._lock:
            if self._shown:
                took = time.monotonic() - self._start
                self._print(f"cohort: downloaded {self.what}: {self.done_files} files, "
                            f"{self.done_bytes / (1 << 20):.1f} MiB in {took:.1f} s", "\n")


class _BlobLock:
    """An exclusive advisory lock on <blob>.lock for the time of a download of the blob."""

    def __init__(self, path: str):
        self.path = path + ".lock"
        self.fd = -1

    def __enter__(self) -> "_BlobLock":
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc: object) -> None:
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)


def _hash_file(path: str, h: "hashlib._Hash") -> int:
    n = 0
    with open(path, "rb") as f:
        while True:
            block = f.read(READ_BYTES)
            if not block:
                return n
            h.update(block)
            n += len(block)


def _content_range_start(resp: http.client.HTTPResponse) -> Optional[int]:
    """The first byte of a 206 answer's ``Content-Range: bytes a-b/n``."""
    value = resp.getheader("Content-Range") or ""
    try:
        return int(value.split()[1].split("-")[0])
    except (IndexError, ValueError):
        return None


def _fetch_range(t: Transport, url_path: str, offset: int, end: int, out, h,
                 progress: Progress, stop: threading.Event) -> int:
    """Appends bytes [offset, end] of the file at `url_path` to `out` (and `h`); returns how
    many arrived (fewer when the connection dropped; CommError when no answer came)."""
    resp = t.stream(url_path, {"Range": f"bytes={offset}-{end}"})
    if resp.status == 206:
        start = _content_range_start(resp)
        if start is not None and start != offset:
            resp.read()
            raise CommError(f"GET {url_path}: asked for bytes from {offset}, the server "
                            f"answered bytes from {start}")
    elif resp.status == 200 and offset == 0:
        end = -1  # the whole file, as one answer: read what comes
    else:
        resp.read()
        raise CommError(f"GET {url_path}: the server answered {resp.status} to a ranged GET")
    got = 0
    want = None if end < 0 else end - offset + 1
    while want is None or got < want:
        if stop.is_set():
            t.close()  # the rest of the answer is not read: drop the connection
            return got
        try:
            block = resp.read(READ_BYTES if want is None else min(READ_BYTES, want - got))
        except (ConnectionError, http.client.HTTPException, OSError):
            t.close()
            return got
        if not block:
            break
        # A write that fails (a full disk) is raised, never taken for a dropped connection:
        # part of the block may be in the file, and fetching the range again would write it
        # after those bytes.
        out.write(block)
        h.update(block)
        got += len(block)
        progress.add(len(block))
    if want is not None and got == want and resp.read(1):
        t.close()
        raise CommError(f"GET {url_path}: the server sent more than the {want} bytes asked for")
    if want is not None and got < want:
        t.close()  # the answer ended early: the connection is not reusable
    return got


def fetch_and_place(t: Transport, url_path: str, sha256: str, size: int, what: str,
                    progress: Progress, stop: threading.Event, dest: str) -> None:
    """fetch_blob then place into `dest`, in one pass where it can: a large blob fetched from
    its first byte is written into the cache and into `dest` block by block (FileWriter's
    copy_to), rather than written into the cache, read back and copied; the copy is renamed
    into place only once the bytes are verified."""
    os.makedirs(os.path.dirname(dest) or ".", exist_ok=True)
    cached = ""

    def fetch(tmp: str) -> bool:
        nonlocal cached
        cached, copied = fetch_blob(t, url_path, sha256, size, what, progress, stop, tmp)
        return copied

    if _replace_with(dest, fetch) or place(cached, dest, sha256=sha256):
        return
    # The cached copy is not the blob (damaged in the cache): it goes, and the blob is fetched.
    with _BlobLock(cached):
        _remove(cached)
    progress.rewind(size)
    if not _replace_with(dest, fetch):
        place(cached, dest)


def _copy_verified(source: str, tmp: Optional[str], sha256: str) -> bool:
    """Copies the cached blob `source` to `tmp`, hashing what it copies: whether the bytes
    are the blob `sha256` (a blob file damaged in the cache with bytes of the same size)."""
    h = hashlib.sha256()
    with open(source, "rb") as f, (open(tmp, "wb") if tmp else open(os.devnull, "wb")) as out:
        while True:
            block = f.read(READ_BYTES)
            if not block:
                break
            h.update(block)
            out.write(block)
    return h.hexdigest() == sha256


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


def _claim_tmp(dest: str) -> Tuple[str, int]:
    """The temporary file of `dest`: ``<dest>.cohort-tmp``, locked (one a download killed
    earlier left is taken over and rewritten), else, while another download writes that one,
    one named after this process and thread. Returns (path, descriptor holding the lock)."""
    tmp = f"{dest}.cohort-tmp"
    fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        st = os.stat(tmp)  # still that name's file (not renamed by the one that held it)?
        if (st.st_dev, st.st_ino) == (os.fstat(fd).st_dev, os.fstat(fd).st_ino):
            return tmp, fd
    except OSError:
        pass
    os.close(fd)
    return f"{tmp}-{os.getpid()}-{threading.get_ident()}", -1


def _replace_with(dest: str, fill: Callable[[str], bool], mode: int = 0o644) -> bool:
    """Whether `fill(tmp)` wrote a temporary file beside `dest` (True), which then replaces
    `dest` (with `mode`); the temporary file is removed when `fill` fails or writes nothing. A
    download killed midway leaves ``<dest>.cohort-tmp``, which the next one reuses."""
    tmp, fd = _claim_tmp(dest)
    try:
        if not fill(tmp):
            _remove(tmp)
            return False
        os.chmod(tmp, mode)
        os.replace(tmp, dest)
        return True
    except BaseException:
        _remove(tmp)
        raise
    finally:
        if fd >= 0:
            os.close(fd)


def fetch_blob(t: Transport, url_path: str, sha256: str, size: int, what: str,
               progress: Progress, stop: threading.Event,
               copy_to: Optional[str] = None) -> Tuple[str, bool]:
    """(the cache path of blob `sha256` (`size` bytes), fetched from `url_path` unless the
    cache holds it; whether `copy_to` got the bytes too). `copy_to` is written with the same
    bytes when the blob is fetched whole (from its first byte) and large (the caller removes it
    when this raises). Raises VerificationError when the bytes do not match."""
    if not _is_sha256(sha256):
        raise UsageError(f"{what}: the manifest's sha256 {sha256!r} is not 64 hex digits")
    final = blob_cache_path(sha256)
    if _cached(final, size):
        progress.add(size, 1, fetched=False)
        return final, False
    os.makedirs(os.path.dirname(final), exist_ok=True)
    with _BlobLock(final):
        if _cached(final, size):  # another process fetched it while this one waited
            progress.add(size, 1, fetched=False)
            return final, False
        part = final + ".part"
        for attempt in (0, 1):
            h = hashlib.sha256()
            have = 0
            if os.path.exists(part):
                if os.path.getsize(part) > size:
                    os.truncate(part, 0)
                have = _hash_file(part, h)
                progress.add(have, fetched=False)
            resumed = have > 0
            copied = copy_to is not None and have == 0 and size >= LARGE_COPY_BYTES
            _fetch_into(t, url_path, part, have, size, h, what, progress, stop,
                        copy_to if copied else None)
            digest = h.hexdigest()
            # The bytes received are the blob's; the file must hold exactly them too.
            if digest == sha256 and os.path.getsize(part) == size:
                break
            os.remove(part)
            if resumed and attempt == 0:
                progress.rewind(size)
                continue  # the partial file of an earlier download was bad: once more, afresh
            if digest == sha256:
                raise VerificationError(
                    f"{what}: the file written is not the {size} bytes received (the disk "
                    f"failed a write?): it was not kept; download it again")
            raise VerificationError(
                f"{what}: the downloaded bytes have SHA-256 {digest}, not {sha256} as the "
                f"manifest says: the file was not kept (the server's copy may be damaged)")
        os.chmod(part, 0o444)
        os.replace(part, final)
    progress.add(0, 1)
    return final, copied


def _cached(path: str, size: int) -> bool:
    try:
        return os.path.getsize(path) == size
    except OSError:
        return False


def _fetch_into(t: Transport, url_path: str, part: str, have: int, size: int, h,
                what: str, progress: Progress, stop: threading.Event,
                copy_to: Optional[str] = None) -> None:
    failures = 0
    # Written on a thread of its own past the page cache (while the next bytes are received
    # and hashed), synced once whole; after a failure what arrived is written, for a next try.
    # A small file the plain way (a thread and two buffers would cost more than they save).
    if copy_to is None and size - have < CHUNK_BYTES:
        writer = PlainWriter(part, have)
    else:
        writer = FileWriter(part, have, copy_to=copy_to)
    with writer as out:
        while have < size:
            if stop.is_set():
                raise _Stopped(f"{what}: stopped (another file failed)")
            end = min(size, have + CHUNK_BYTES) - 1
            try:
                got = _fetch_range(t, url_path, have, end, out, h, progress, stop)
            except Unreachable:
                if failures >= RETRIES:
                    raise
                got = 0
            have += got
            if have > size:
                raise VerificationError(f"{what}: the server sent more than the manifest's "
                                        f"{size} bytes: the file was not kept")
            if got == 0 and have < size:
                failures += 1
                if failures > RETRIES:
                    raise CommError(f"{what}: the download stopped at byte {have} of {size} "
                                    f"{RETRIES + 1} times; run it again to continue")
                time.sleep(min(5.0, 0.2 * 2 ** failures))
            elif got > 0:
                failures = 0


def place(source: str, dest: str, mode: int = 0o644, sha256: Optional[str] = None) -> bool:
    """Copies `source` to `dest` through a temporary file renamed into place; with `sha256`,
    hashing what it copies: whether the bytes were the blob (else `dest` is left as it was)."""
    os.makedirs(os.path.dirname(dest) or ".", exist_ok=True)
    try:
        if os.path.samefile(source, dest):
            return sha256 is None or _copy_verified(source, None, sha256)
    except OSError:
        pass
    def copy(tmp: str) -> bool:
        # Through the page cache, not FileWriter: out of a cached blob that is faster here,
        # the copy's writeback counted too (docs/benchmarks.md, "The SDK's download"); a blob
        # fetched now reached `dest` in the same pass (fetch_and_place).
        if sha256 is None:
            shutil.copyfile(source, tmp)
            return True
        return _copy_verified(source, tmp, sha256)

    return _replace_with(dest, copy, mode)


def file_url_path(ref: str) -> str:
    """The local path of a file:// reference."""
    parsed = urllib.parse.urlsplit(ref)
    if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
        raise UsageError(f"reference {ref!r}: not a local file:// URI")
    return urllib.parse.unquote(parsed.path)


def run_parallel(tasks: Sequence[Callable[[Transport, threading.Event], None]],
                 transport: Transport, workers: int) -> None:
    """Runs `tasks` on up to `workers` threads, each with its own connection (a clone of
    `transport`); the first error stops the others (between ranges) and is raised."""
    if not tasks:
        return
    stop = threading.Event()
    local = threading.local()
    transports: List[Transport] = []
    lock = threading.Lock()

    def run_one(task: Callable[[Transport, threading.Event], None]) -> None:
        if stop.is_set():
            return
        t = getattr(local, "t", None)
        if t is None:
            t = local.t = transport.clone()
            with lock:
                transports.append(t)
        try:
            task(t, stop)
        except BaseException:
            stop.set()
            raise

    pool = ThreadPoolExecutor(max_workers=max(1, min(workers, len(tasks))),
                              thread_name_prefix="cohort-download")
    try:
        futures = [pool.submit(run_one, task) for task in tasks]
        wait(futures, return_when=FIRST_EXCEPTION)
        if stop.is_set():
            for f in futures:
                f.cancel()
            wait(futures)
            errors = [f.exception() for f in futures if not f.cancelled() and f.exception()]
            errors.sort(key=lambda e: isinstance(e, _Stopped))  # the cause first
            if errors:
                raise errors[0]  # type: ignore[misc]
    finally:
        pool.shutdown(wait=True)
        for t in transports:
            t.close()
