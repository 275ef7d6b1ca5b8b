"""Writing a large file in order, fast (docs/python-api.md, "Artifacts"): what a download writes
(its blob in the cache, then the copy in the download directory).

``FileWriter(path, start)`` writes bytes from offset ``start`` of ``path`` on in the order they
are given (from 0: the file is truncated first), on a thread of its own (the caller fills one buffer while the other is written), past
the page cache where the file system allows it (``O_DIRECT``: 8 MiB blocks from page-aligned
mapped buffers; two of them, 16 MiB, per file being written), the file's unaligned tail through the page cache. Copying into the page cache is
the slow part of writing here (the kernel's copy runs at a fraction of what the disk takes:
docs/benchmarks.md), and a download's bytes are not read again soon. A file system that refuses
``O_DIRECT`` (at ``fcntl`` or at the first write: EINVAL, EOPNOTSUPP) gets the same blocks through
the page cache. ``close()`` writes what is left and syncs the file's data; an error of the
writing thread is raised by the next ``write`` and again by ``close``. The C++ side does the same
(``wal::FileSystem::NewStreamingWriter``). ``copy_to`` names a second file written with the same
blocks (a download's file in its directory, beside the cache's copy).
"""
from __future__ import annotations

import errno
import fcntl
import mmap
import os
from concurrent.futures import Future, ThreadPoolExecutor
from typing import List, Optional

_datasync = getattr(os, "fdatasync", os.fsync)  # macOS has fsync only
BLOCK_BYTES = 8 << 20  # one write; a multiple of every block size O_DIRECT asks for
_ALIGN = 4096


def _open(path: str, start: int) -> int:
    """`path` opened for writing from `start` (from 0: truncated, so no old tail stays)."""
    flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
    return os.open(path, flags | (os.O_TRUNC if start == 0 else 0), 0o644)


class _ClosedOnExit:
    """`with`: close() at the end; after an error, close(sync=False), whose own OSError gives
    way to the error being raised."""

    def close(self, sync: bool = True) -> None:
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc) -> None:
        if exc_type is None:
            self.close()
        else:
            try:
                self.close(sync=False)
            except OSError:
                pass  # the first error is the one being raised


class _Target:
    """One file written: its descriptor, whether O_DIRECT is on, where the next block goes."""

    def __init__(self, path: str, start: int, direct: bool) -> None:
        self.fd = _open(path, start)
        self.pos = start
        self.direct = False
        if direct and start % _ALIGN == 0 and hasattr(os, "O_DIRECT"):
            try:
                self.set_direct(True)
            except OSError:
                pass

    def set_direct(self, on: bool) -> None:
        flags = fcntl.fcntl(self.fd, fcntl.F_GETFL)
        fcntl.fcntl(self.fd, fcntl.F_SETFL, (flags | os.O_DIRECT) if on else (flags & ~os.O_DIRECT))
        self.direct = on

    def write_block(self, view: memoryview) -> None:
        if self.direct and len(view) % _ALIGN != 0:
            self.set_direct(False)  # the tail: O_DIRECT takes whole blocks only
        try:
            self._pwrite_all(view)
        except OSError as e:
            if not (self.direct and e.errno in (errno.EINVAL, errno.EOPNOTSUPP)):
                raise
            self.set_direct(False)  # the file system takes the flag, not the writes
            self._pwrite_all(view)
        self.pos += len(view)

    def _pwrite_all(self, view: memoryview) -> None:
        done = 0
        while done < len(view):
            n = os.pwrite(self.fd, view[done:], self.pos + done)
            if n <= 0:  # a regular file that takes nothing: not worth waiting for
                raise OSError(errno.EIO, f"pwrite wrote nothing at byte {self.pos + done}")
            done += n


class FileWriter(_ClosedOnExit):
    """See the module's doc. `copy_to`: a second file that gets the same bytes (from its
    start: only with `start` 0), written block by block beside the first (a download's copy in
    its directory beside the cache's: the bytes are not read back from the disk to copy them)."""

    def __init__(self, path: str, start: int = 0, direct: bool = True,
                 copy_to: Optional[str] = None) -> None:
        if copy_to is not None and start != 0:
            raise ValueError("FileWriter: copy_to needs start 0")
        self._targets = [_Target(path, start, direct)]
        self._buffers: List[mmap.mmap] = []
        try:
            if copy_to is not None:
                self._targets.append(_Target(copy_to, 0, direct))
            self._buffers = [mmap.mmap(-1, BLOCK_BYTES), mmap.mmap(-1, BLOCK_BYTES)]
            self._thread = ThreadPoolExecutor(max_workers=1,
                                              thread_name_prefix="cohort-file-write")
        except BaseException:
            for target in self._targets:
                os.close(target.fd)
            for buf in self._buffers:
                buf.close()
            raise
        self._filling = 0  # the buffer being filled; the other may be being written
        self._fill = 0
        self._pending: Optional[Future] = None
        self._error: Optional[BaseException] = None  # a write failed: raised again by close
        self._closed = False

    @property
    def direct(self) -> bool:
        """Whether blocks go past the page cache (so far), in every file written."""
        return all(t.direct for t in self._targets)

    def write(self, data) -> None:
        view = memoryview(data).cast("B")
        while view:
            n = min(len(view), BLOCK_BYTES - self._fill)
            buf = self._buffers[self._filling]
            buf[self._fill:self._fill + n] = view[:n]
            self._fill += n
            view = view[n:]
            if self._fill == BLOCK_BYTES:
                self._hand_over()

    def _hand_over(self) -> None:
        self._wait()  # the other buffer is free again (and its error, if any, raised here)
        buf, length = self._buffers[self._filling], self._fill
        self._pending = self._thread.submit(self._write_block, buf, length)
        self._filling ^= 1
        self._fill = 0

    def _wait(self) -> None:
        if self._pending is not None:
            pending, self._pending = self._pending, None
            try:
                pending.result()
            except BaseException as e:
                self._error = e
                raise

    def _write_block(self, buf: mmap.mmap, length: int) -> None:
        with memoryview(buf) as whole, whole[:length] as view:
            for target in self._targets:
                target.write_block(view)

    def close(self, sync: bool = True) -> None:
        """Writes what is left (syncing the files' data when `sync`) and closes the files; the
        first error of the writes, if any (raised again when it was raised before: the bytes
        were not all written). `sync=False` after a failure: what was given so far is written
        (a download continues from it), not synced; after an error of the writes, nothing more
        is written."""
        if self._closed:
            return
        self._closed = True
        try:
            try:
                self._wait()
                if self._error is not None:
                    raise self._error
                if self._fill:
                    self._hand_over()
                    self._wait()
            finally:
                self._thread.shutdown(wait=True)
            if sync:
                for target in self._targets:
                    _datasync(target.fd)
        finally:
            for target in self._targets:
                os.close(target.fd)
            for buf in self._buffers:
                try:
                    buf.close()
                except BufferError:
                    pass  # a view of it lives on in an error's traceback: freed with it


class PlainWriter(_ClosedOnExit):
    """FileWriter's interface over an ordinary buffered file (no thread, no O_DIRECT): for small
    files, where those would cost more than they save."""

    def __init__(self, path: str, start: int = 0) -> None:
        fd = _open(path, start)
        try:
            self._file = os.fdopen(fd, "wb")
        except BaseException:
            os.close(fd)
            raise
        self._file.seek(start)

    def write(self, data) -> None:
        self._file.write(data)

    def close(self, sync: bool = True) -> None:
        if self._file.closed:
            return
        try:
            self._file.flush()
            if sync:
                _datasync(self._file.fileno())
        finally:
            self._file.close()
