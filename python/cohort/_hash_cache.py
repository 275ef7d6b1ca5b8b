"""The SDK's hash cache (docs/formats.md, "Hash cache"): a file's SHA-256 by its identity
(device, inode, size, modification time), shared with the agent and ``cohort artifact put``, so
that a file logged again unchanged is not read again; and the one read of a file that hashes it
(and copies it into staging at the same time)."""
from __future__ import annotations

import hashlib
import os
import queue
import sqlite3
import threading
import time
from typing import Any, Dict, List, Optional

_CHUNK = 1 << 20
_HASH_QUEUE_CHUNKS = 4  # read and not hashed yet, at most (4 MiB)


def _cache_dir() -> str:
    from .artifact_download import cache_dir  # $COHORT_CACHE_DIR, $XDG_CACHE_HOME/cohort, ...
    return cache_dir()


# A digest is recorded only when the file did not change while it was hashed and was last
# modified this long before (agent::kRacyNanos in src/agent/hash_cache.h: the same rule).
_RACY_NS = 1_000_000_000


def _entry_key(st: os.stat_result) -> str:
    return f"{st.st_dev}-{st.st_ino}-{st.st_size}-{st.st_mtime_ns}"


def _entry_text(key: str, sha256: str) -> str:
    check = hashlib.sha256(f"{key} {sha256}".encode()).hexdigest()[:16]
    return f"{sha256} {check}\n"


class HashCache:
    """SHA-256 of files by (st_dev, st_ino, size, mtime_ns) in ``hashes/v1`` of the user's cache
    directory, one small file per entry (docs/formats.md, "Hash cache": the format the C++ client
    and ``cohort artifact put`` share), and which servers hold which blobs, in one SQLite file
    beside it (safe across processes). Every failure of the cache is a miss, never an error."""

    def __init__(self, path: Optional[str] = None) -> None:
        self.path = path or os.path.join(_cache_dir(), "artifact-held.sqlite")
        self.dir = os.path.join(os.path.dirname(self.path), "hashes", "v1")
        self._lock = threading.Lock()

    def _connect(self) -> Optional[sqlite3.Connection]:
        try:
            os.makedirs(os.path.dirname(self.path), mode=0o700, exist_ok=True)
            db = sqlite3.connect(self.path, timeout=10)
            db.execute("CREATE TABLE IF NOT EXISTS held (server TEXT, entity TEXT, sha256 TEXT,"
                       " PRIMARY KEY (server, entity, sha256))")
            return db
        except (OSError, sqlite3.Error):
            return None  # no cache: everything is copied

    def lookup(self, st: os.stat_result) -> Optional[str]:
        key = _entry_key(st)
        try:
            with open(os.path.join(self.dir, key), "rb") as f:
                text = f.read(83).decode("ascii")
        except (OSError, UnicodeDecodeError):
            return None
        sha = text[:64]
        if len(text) != 82 or text != _entry_text(key, sha) or not all(
                c in "0123456789abcdef" for c in sha):
            return None
        return sha

    def store(self, st: os.stat_result, sha256: str) -> None:
        """Records ``sha256`` for the file of identity ``st`` (no questions asked: hash_file
        is what decides whether a digest may be recorded)."""
        key = _entry_key(st)
        tmp = os.path.join(self.dir, f".{key}.{os.getpid()}.{threading.get_ident()}")
        try:
            os.makedirs(self.dir, mode=0o700, exist_ok=True)
            with open(tmp, "w", encoding="ascii") as f:
                f.write(_entry_text(key, sha256))
            os.replace(tmp, os.path.join(self.dir, key))
        except OSError:
            try:
                os.unlink(tmp)
            except OSError:
                pass

    def forget(self, st: os.stat_result) -> None:
        """Removes the entry of the file of identity ``st`` (its digest turned out wrong)."""
        try:
            os.unlink(os.path.join(self.dir, _entry_key(st)))
        except OSError:
            pass

    def hash_file(self, path: str, copy_to: Optional[str] = None) -> Dict[str, Any]:
        """{"sha256", "size"} of ``path``: from the cache when it holds the file's identity and
        nothing is to be copied, else read (and copied to ``copy_to``) and recorded when the
        file did not change meanwhile and was last modified over a second before."""
        started = time.time_ns()
        before = os.stat(path)
        if copy_to is None:
            sha = self.lookup(before)
            if sha is not None:
                return {"sha256": sha, "size": before.st_size}
        d = _hash_file(path, copy_to)
        after = os.stat(path)
        if (_entry_key(before) == _entry_key(after) and d["size"] == after.st_size
                and after.st_mtime_ns <= started - _RACY_NS):
            self.store(after, d["sha256"])
        return d

    def held(self, server: str, entity: str, sha256: str) -> bool:
        with self._lock:
            db = self._connect()
            if db is None:
                return False
            try:
                return db.execute("SELECT 1 FROM held WHERE server=? AND entity=? AND sha256=?",
                                  (server, entity, sha256)).fetchone() is not None
            except sqlite3.Error:
                return False
            finally:
                db.close()

    def note_held(self, server: str, entity: str, digests: List[str]) -> None:
        with self._lock:
            db = self._connect()
            if db is None:
                return
            try:
                with db:
                    db.executemany("INSERT OR IGNORE INTO held VALUES (?, ?, ?)",
                                   [(server, entity, d) for d in digests])
            except sqlite3.Error:
                pass
            finally:
                db.close()



def _hash_file(path: str, copy_to: Optional[str]) -> Dict[str, Any]:
    """SHA-256 and size of `path`, read once; the bytes also go to `copy_to` when given.

    With a copy, the hash runs on a thread of its own beside the copy (hashlib and file writes
    release the GIL): on two cores the staging takes about as long as the hash, not the hash and
    the copy one after the other (docs/benchmarks.md, "Artifacts")."""
    h = hashlib.sha256()
    size = 0
    if not copy_to:
        with open(path, "rb") as f:
            while True:
                chunk = f.read(_CHUNK)
                if not chunk:
                    break
                h.update(chunk)
                size += len(chunk)
        return {"sha256": h.hexdigest(), "size": size}
    chunks: "queue.Queue[Optional[bytes]]" = queue.Queue(maxsize=_HASH_QUEUE_CHUNKS)

    failed: List[BaseException] = []

    def hash_chunks() -> None:
        # Reads the queue to its end whatever happens, so that the copying side never waits on
        # a full queue; a failure is raised by the caller once the thread ended.
        while True:
            chunk = chunks.get()
            if chunk is None:
                return
            if not failed:
                try:
                    h.update(chunk)
                except BaseException as e:  # noqa: BLE001 (re-raised below)
                    failed.append(e)

    hasher = threading.Thread(target=hash_chunks, name="cohort-artifact-hash", daemon=True)
    hasher.start()
    try:
        with open(path, "rb") as f, open(copy_to, "wb") as out:
            while True:
                chunk = f.read(_CHUNK)
                if not chunk or failed:
                    break
                chunks.put(chunk)
                size += len(chunk)
                out.write(chunk)
        # The copy is not synced (as HashFile in C++): a machine crash before the commit leaves
        # a damaged copy that the size or SHA-256 checks refuse; the version then fails.
    finally:
        chunks.put(None)
        hasher.join()
    if failed:
        raise failed[0]
    return {"sha256": h.hexdigest(), "size": size}
