"""``cohort.Artifact`` and ``run.log_artifact``: versioned sets of files (docs/python-api.md,
docs/artifacts.md).

``run.log_artifact`` returns at once. Files added with the default policy ``"mutable"`` are
copied into the node agent's staging directory, so that a file the job overwrites later cannot
change the version: at the call when they are small (up to ``_SYNC_COPY_BYTES`` in all), else by a
background thread (never the training thread), which checks that the file is still as it was at
the call (``_identity``) before and after its copy and fails the version if not. That thread
hashes the files (SHA-256, ``hashlib``) and hands the manifest to the agent, which writes it to
its WAL and uploads it in the background. ``artifact.wait()`` blocks until the version is
committed.

Hashes are cached under the user's cache directory, keyed by (device, inode, size, mtime), so an
unchanged 2 GB checkpoint logged again is not read again; a file whose blob this server is known
to hold (an earlier version of it was committed) is not copied either.
"""
from __future__ import annotations

import contextlib
import datetime
import enum
import errno
import fcntl
import hashlib
import json
import numbers
import os
import re
import shutil
import tempfile
import threading
import time
import urllib.parse
import uuid
import weakref
from typing import IO, Any, Dict, Iterator, List, NoReturn, Optional, Set, Tuple

from ._hash_cache import _CHUNK, _RACY_NS, HashCache, _hash_file  # noqa: F401 (re-exported)
from ._jsonable import jsonable
from .errors import Error

_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
_RESERVED_ALIAS = re.compile(r"^(latest|versions|aliases|v[0-9]+)$")
_POLICIES = ("mutable", "immutable")
# Mutable files of one log_artifact call copied into staging at the call, up to this many bytes in
# all (a few ms); larger ones are copied in the background.
_SYNC_COPY_BYTES = 8 << 20
_SYNC_COPY_FILES = 64  # and at most this many files (a dataset of many small ones)


class ArtifactError(Error):
    """A logged artifact version could not be committed (the message is the server's or the
    reason the files could not be read)."""


def _identity(st: os.stat_result) -> Tuple[int, ...]:
    """What changes when a file is rewritten (in place or by a new file under its name)."""
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _rewritten(name: str) -> ArtifactError:
    return ArtifactError(
        f"{name} was rewritten after log_artifact returned and before it was copied (Cohort "
        f"copies large files in the background): log it after the file is complete, save each "
        f"checkpoint under its own name, or pass policy='immutable' only if the file is never "
        f"changed")




def _check_name(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{what}: expected a str, got {type(value).__name__}")
    if not _NAME.match(value) or value.startswith("."):
        raise ValueError(f"{what} {value!r}: must be 1-128 characters of A-Z a-z 0-9 . _ -, "
                         f"not starting with '.'")
    return value


def check_alias(alias: Any) -> str:
    _check_name(alias, "alias")
    if _RESERVED_ALIAS.match(alias):
        raise ValueError(f"alias {alias!r}: reserved (latest moves by itself; versions, aliases "
                         f"and v<N> are not aliases)")
    return alias


def check_path(path: Any) -> str:
    """A path inside a version: relative, '/'-separated, no empty, '.' or '..' segment, no
    backslash or control character, at most 1024 bytes."""
    if not isinstance(path, str):
        raise ValueError(f"artifact file name: expected a str, got {type(path).__name__}")
    raw = path.encode("utf-8", "surrogatepass")
    if not raw or len(raw) > 1024:
        raise ValueError(f"artifact file name {path!r}: must be 1-1024 bytes")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in path):
        raise ValueError(f"artifact file name {path!r}: control characters are not allowed")
    if "\\" in path:
        raise ValueError(f"artifact file name {path!r}: backslashes are not allowed (use '/')")
    if path.startswith("/"):
        raise ValueError(f"artifact file name {path!r}: must be relative")
    if any(seg in ("", ".", "..") for seg in path.split("/")):
        raise ValueError(f"artifact file name {path!r}: empty, '.' and '..' segments are not "
                         f"allowed")
    return path


_cache: Optional[HashCache] = None


def hash_cache() -> HashCache:
    global _cache
    if _cache is None:
        _cache = HashCache()
    return _cache


# This process's lock file per staging root (path and the descriptor that holds its lock, for the
# life of the process): every staging directory it claims hard-links it as ``.lock``
# (docs/formats.md, "Staging"; agent/staging_claim.h).
_claims: Dict[str, Any] = {}
_claims_lock = threading.Lock()


_retired: List[int] = []  # descriptors of replaced lock files, still held (directories link them)

# Staging roots whose file system refused a hard link of this process's lock file (EPERM and
# the like: no hard links there): their directories are not claimed, and no lock file is made
# again for each of them.
_unlinkable: Set[str] = set()

# What a link refused because the file system has no hard links (or none across these names).
_NO_LINKS = frozenset({errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS, errno.EXDEV})


def _forget_claims_in_child() -> None:
    """A forked child's copies of its parent's lock descriptors: closed, never unlocked (that
    would unlock the parent's); the child takes its own lock when it claims a directory."""
    global _claims_lock
    _claims_lock = threading.Lock()
    for fd in [fd for _path, fd in _claims.values()] + _retired:
        with contextlib.suppress(OSError):
            os.close(fd)
    _claims.clear()
    _retired.clear()


os.register_at_fork(after_in_child=_forget_claims_in_child)


def _process_lock_file(root: str, pid_ns: int, start_ticks: str, fresh: bool = False) -> str:
    """This process's lock file under the staging root `root`, made and locked on first use
    (`fresh`: made again, the one known having gone or reached its file system's limit of
    links; its descriptor stays held, as directories not handed over yet may link it)."""
    with _claims_lock:
        held = _claims.get(root)
        if held is not None:
            if not fresh:
                return held[0]
            _retired.append(held[1])
            del _claims[root]
        d = os.path.join(root, ".clients")
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, f"{pid_ns}.{os.getpid()}.{start_ticks}")
        if fresh:
            path += f".{time.time_ns()}"
        # Locked before it has its name: the agent never finds it under that name unlocked while
        # this process runs (it removes free lock files).
        tmp = path + ".tmp"
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.write(fd, f"{pid_ns}\n".encode())
            os.replace(tmp, path)
        except OSError:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        _claims[root] = (path, fd)
        return path


def _lock_file_replaceable(lock: str, error: OSError) -> bool:
    """Whether a claim whose link of `lock` failed with `error` may try once more with a new
    lock file: the one known is gone, or has as many links as its file system allows."""
    if error.errno == errno.EMLINK:
        return True
    try:
        os.stat(lock)
    except FileNotFoundError:
        return True
    except OSError:
        pass
    return False


def _write_owner(staging: str) -> None:
    """Claims a staging directory for this process until the agent has the intent (docs/formats.md,
    "Staging"): hard-links this process's lock file (locked while it runs, which tells the agent
    so in whatever PID namespace each runs) as ``.lock``, then names this process in ``.owner``.
    If the process dies before the hand-over, the agent deletes the copies. Without /proc, the
    lock or the link, nothing is written: the directory is then kept (never deleted under a live
    client)."""
    try:
        with open("/proc/self/stat") as f:
            stat = f.read()
        start_ticks = stat[stat.rindex(")") + 2:].split()[19]
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot_id = f.read().strip()
        pid_ns = os.stat("/proc/self/ns/pid").st_ino
    except (OSError, ValueError, IndexError):
        return
    if not boot_id or " " in boot_id or not pid_ns:
        return
    root = os.path.dirname(os.path.normpath(staging))
    if root in _unlinkable:
        return
    link = os.path.join(staging, ".lock")
    lock: Optional[str] = None
    try:
        lock = _process_lock_file(root, pid_ns, start_ticks)
        os.link(lock, link)
    except OSError as e:
        # Again with a new lock file only when none could be made, or the one known is gone
        # (its root made again) or has as many links as its file system allows: a new file
        # for any other refusal would leave one more lock file and held descriptor per claim.
        if lock is not None and not _lock_file_replaceable(lock, e):
            if e.errno in _NO_LINKS:
                _unlinkable.add(root)
            return
        try:
            os.link(_process_lock_file(root, pid_ns, start_ticks, fresh=True), link)
        except OSError:
            return
    tmp = os.path.join(staging, ".owner.tmp")
    with open(tmp, "w") as f:
        f.write(f"{os.getpid()} {start_ticks} {boot_id}\n")
    os.replace(tmp, os.path.join(staging, ".owner"))


def _files_under(top: str) -> List[Tuple[str, str]]:
    """(path, path relative to `top` with '/') of everything under the directory `top` that is
    not a directory, in name order. Symbolic links to directories are followed; one that names a
    directory on its own path from `top` (by st_dev and st_ino: a loop) is left out. A
    directory that cannot be listed or looked at raises ValueError naming it."""
    def unlistable(e: OSError) -> NoReturn:
        raise ValueError(f"add_dir: cannot list the directory {e.filename!r}: "
                         f"{e.strerror or e}") from e

    def identity(path: str) -> Tuple[int, int]:
        try:
            st = os.stat(path)
        except OSError as e:
            unlistable(e)
        return st.st_dev, st.st_ino

    # The directories on the way from `top` to each directory walked (its own included).
    chains: Dict[str, frozenset] = {top: frozenset([identity(top)])}
    out: List[Tuple[str, str]] = []
    for root, dirs, files in os.walk(top, onerror=unlistable, followlinks=True):
        chain = chains.pop(root)
        kept = []
        for d in sorted(dirs):
            path = os.path.join(root, d)
            key = identity(path)
            if key not in chain:
                chains[path] = chain | {key}
                kept.append(d)
        dirs[:] = kept
        for f in sorted(files):
            full = os.path.join(root, f)
            out.append((full, os.path.relpath(full, top).replace(os.sep, "/")))
    return out


def _metadata(value: Any, where: str = "", depth: int = 0) -> Any:
    """Metadata as JSON values, converted as wandb's json_friendly does (numpy and torch values,
    datetimes, enums, paths: _values.jsonable); another object is a ValueError naming it."""
    if depth > 64:
        raise ValueError("artifact metadata: nested too deeply")
    if isinstance(value, dict):
        return {str(k): _metadata(v, f"{where}[{k!r}]", depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_metadata(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(value)]
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    mod = type(value).__module__.split(".")[0]
    if value is None or isinstance(value, (bool, str, numbers.Number, enum.Enum, os.PathLike)) \
            or mod in ("numpy", "torch"):
        return jsonable(value)
    raise ValueError(f"artifact metadata{where}: {type(value).__name__} values are not "
                     f"JSON-serializable (use numbers, strings, lists and dicts)")


# ---- Artifact ----------------------------------------------------------------------------------

class Artifact:
    """A version of an artifact to log: ``cohort.Artifact(name, type, description=None,
    metadata=None)``, then ``add_file``/``add_dir``/``add_reference``/``new_file`` and
    ``run.log_artifact(artifact)``. After ``wait()``: ``version`` ("v3"), ``digest``, ``size``."""

    def __init__(self, name: str, type: str, description: Optional[str] = None,
                 metadata: Optional[Dict[str, Any]] = None) -> None:
        self.name = _check_name(name, "artifact name")
        self.type = _check_name(type, "artifact type")
        if description is not None and not isinstance(description, str):
            raise ValueError("artifact description: expected a str")
        self.description = description or ""
        if metadata is None:
            metadata = {}
        if not isinstance(metadata, dict):
            raise ValueError("artifact metadata: expected a dict")
        self.metadata = _metadata(metadata)
        self._entries: Dict[str, Dict[str, Any]] = {}
        self._tmp_dir: Optional[str] = None
        self._id: Optional[str] = None
        self._run: Any = None
        self._thread: Optional[threading.Thread] = None
        self._previous: Optional["Artifact"] = None  # logged before this one by the same run
        self._error: Optional[BaseException] = None
        self._staging: Optional[str] = None  # this version's staging directory, once made
        self._state: Dict[str, Any] = {}
        self.aliases: List[str] = []
        self.version: Optional[str] = None
        self.digest: Optional[str] = None
        self.size: Optional[int] = None

    def __repr__(self) -> str:
        v = self.version or ("logging" if self._id else "draft")
        return f"<cohort.Artifact {self.name}:{v} type={self.type} files={len(self._entries)}>"

    # -- building ----------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._id is not None:
            raise ValueError(f"artifact {self.name}: already logged; make a new Artifact")

    def _add(self, name: str, entry: Dict[str, Any]) -> None:
        check_path(name)
        if name in self._entries:
            raise ValueError(f"artifact {self.name}: the file name {name!r} is added twice")
        self._entries[name] = entry

    def add_file(self, local_path: str, name: Optional[str] = None,
                 policy: str = "mutable") -> "Artifact":
        """Adds a file as ``name`` (default: its base name). ``policy="mutable"`` (default)
        copies it while hashing, so later changes to the file do not affect the version;
        ``"immutable"`` uploads it in place (it must not change until the version is
        committed)."""
        self._check_open()
        if policy not in _POLICIES:
            raise ValueError(f"add_file: policy must be 'mutable' or 'immutable', not {policy!r}")
        local_path = os.fspath(local_path)
        if not os.path.isfile(local_path):
            raise ValueError(f"add_file: {local_path!r} is not a file")
        self._add(name if name is not None else os.path.basename(local_path),
                  {"kind": "file", "source": os.path.abspath(local_path), "policy": policy})
        return self

    def add_dir(self, local_path: str, name: Optional[str] = None,
                policy: str = "mutable") -> "Artifact":
        """Adds every file under a directory, as ``name/relative/path`` (default: at the
        version's top). Symbolic links to directories are followed (as ``cohort artifact put``
        does), except one that leads back to a directory it is inside of (a loop, which holds
        nothing new); a directory that cannot be listed raises ValueError naming it."""
        self._check_open()
        local_path = os.fspath(local_path)
        if not os.path.isdir(local_path):
            raise ValueError(f"add_dir: {local_path!r} is not a directory")
        prefix = name.strip("/") + "/" if name else ""
        for full, rel in _files_under(local_path):
            self.add_file(full, prefix + rel, policy=policy)
        return self

    def add_reference(self, uri: str, name: Optional[str] = None, digest: Optional[str] = None,
                      size: Optional[int] = None) -> "Artifact":
        """Adds a reference: ``file://`` (its SHA-256 and size are computed when logged),
        ``s3://`` or ``http(s)://`` (stored as given, with ``digest``, e.g. an ETag, and
        ``size`` when known). No bytes are uploaded."""
        self._check_open()
        if not isinstance(uri, str):
            raise ValueError("add_reference: expected a URI string")
        parsed = urllib.parse.urlparse(uri)
        if parsed.scheme not in ("file", "s3", "http", "https"):
            raise ValueError(f"add_reference {uri!r}: only file://, s3://, http:// and https:// "
                             f"references are supported")
        if size is not None and (not isinstance(size, int) or size < 0):
            raise ValueError("add_reference: size must be a non-negative int")
        if digest is not None and not isinstance(digest, str):
            raise ValueError("add_reference: digest must be a str")
        entry: Dict[str, Any] = {"kind": "ref", "ref": uri, "digest": digest, "size": size}
        if parsed.scheme == "file":
            local = urllib.parse.unquote(parsed.path)
            if not os.path.isfile(local):
                raise ValueError(f"add_reference {uri!r}: not a file")
            entry["local"] = local
        default = os.path.basename(parsed.path.rstrip("/")) or parsed.netloc
        self._add(name if name is not None else default, entry)
        return self

    @contextlib.contextmanager
    def new_file(self, name: str, mode: str = "w", encoding: Optional[str] = None) -> Iterator[IO]:
        """``with artifact.new_file("config.yaml") as f: f.write(...)``: a file written into a
        temporary directory owned by the artifact, added as ``name`` when the block ends."""
        self._check_open()
        check_path(name)
        if "r" in mode and "+" not in mode:
            raise ValueError("new_file: mode must be a write mode ('w', 'wb', ...)")
        if name in self._entries:
            raise ValueError(f"artifact {self.name}: the file name {name!r} is added twice")
        if self._tmp_dir is None:
            self._tmp_dir = tempfile.mkdtemp(prefix="cohort-artifact-")
            # An artifact never logged takes its directory with it when it is collected (a
            # logged one's goes once hashed); not at exit, where a hashing may still read it.
            weakref.finalize(self, shutil.rmtree, self._tmp_dir, True).atexit = False
        path = os.path.join(self._tmp_dir, *name.split("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, mode, encoding=encoding if "b" not in mode else None) as f:
            yield f
        # Copied while hashed (mutable): the temporary directory goes once logged.
        self._add(name, {"kind": "file", "source": path, "policy": "mutable"})

    @property
    def manifest(self) -> Dict[str, Dict[str, Any]]:
        """path -> {"sha256", "size"} or {"ref", "digest", "size"} (digests and sizes of files
        are known once the artifact was hashed: after log_artifact's hashing, e.g. after
        wait())."""
        out = {}
        for path, e in sorted(self._entries.items()):
            if e["kind"] == "ref":
                out[path] = {"ref": e["ref"], "digest": e.get("digest"), "size": e.get("size")}
            else:
                out[path] = {"sha256": e.get("sha256"), "size": e.get("size")}
        return out

    # -- logging -------------------------------------------------------------------------------
    def _start(self, run: Any, aliases: List[str]) -> None:
        if not self._entries:
            raise ValueError(f"artifact {self.name}: no files added")
        self._check_open()
        self.aliases = aliases
        self._run = run
        self._id = uuid.uuid4().hex
        # Versions reach the agent in the order they were logged (it commits them in that
        # order), whichever finishes hashing first: "latest" and moved aliases ("best") then
        # end on the version logged last, as the seed's SDK does.
        self._previous = getattr(run, "_last_logged_artifact", None)
        try:
            run._last_logged_artifact = self
        except AttributeError:
            pass
        interrupted: Optional[BaseException] = None
        try:
            self._snapshot()
        except Exception as e:  # noqa: BLE001 - reported by wait() and finish()
            self._error = e
        except BaseException as e:  # Ctrl-C, SystemExit during the copy: the version fails,
            self._error = interrupted = e  # and the caller gets the interruption
        self._thread = threading.Thread(target=self._prepare, name=f"cohort-artifact-{self.name}",
                                        daemon=True)
        self._thread.start()
        if interrupted is not None:
            raise interrupted

    def _open_staging(self) -> str:
        """This version's staging directory, made and claimed on first use ("": none)."""
        if self._staging is None:
            root = self._run._artifact_staging_dir
            self._staging = os.path.join(root, self._id) if root else ""
            if self._staging:
                os.makedirs(self._staging, mode=0o700, exist_ok=True)
                _write_owner(self._staging)
        return self._staging

    def _snapshot(self) -> None:
        """At the call: records each file's identity, and copies the small mutable ones into
        staging (up to _SYNC_COPY_BYTES in all), so that the job's next save cannot touch them."""
        budget, files = _SYNC_COPY_BYTES, _SYNC_COPY_FILES
        for i, (path, e) in enumerate(sorted(self._entries.items())):
            if e["kind"] != "file":
                continue
            if e["policy"] != "mutable" or files == 0:  # its identity only (one stat)
                e["identity"] = _identity(os.stat(e["source"]))
                continue
            with open(e["source"], "rb") as f:
                st = os.fstat(f.fileno())
                e["identity"] = _identity(st)
                if e["policy"] != "mutable" or st.st_size > budget or not self._open_staging():
                    continue
                target = os.path.join(self._staging, str(i))
                with open(target, "wb") as out:
                    shutil.copyfileobj(f, out, _CHUNK)
                    copied = out.tell()
                changed = _identity(os.fstat(f.fileno())) != e["identity"]
            if changed or copied != st.st_size:  # being written while logged
                raise _rewritten(path)
            budget -= st.st_size
            files -= 1
            e["staged"] = target

    def _server(self) -> str:
        url = getattr(self._run, "url", "") or ""
        return url.rsplit("/", 4)[0] if url.count("/") >= 4 else url

    def _prepare(self) -> None:
        """The background part of log_artifact: hash, stage, hand to the agent."""
        from ._threads import quiet_thread
        quiet_thread()
        staging = self._staging or ""
        try:
            if self._error is not None:  # at the call
                raise self._error
            staging = self._open_staging()
            cache = hash_cache()
            server, entity = self._server(), self._run.entity
            files = []
            for i, (path, e) in enumerate(sorted(self._entries.items())):
                if e["kind"] == "ref":
                    if "local" in e:
                        d = cache.hash_file(e["local"])
                        e["digest"], e["size"] = d["sha256"], d["size"]
                    files.append({"path": path, "ref": e["ref"], **{
                        k: e[k] for k in ("digest", "size") if e.get(k) not in (None, "")}})
                    continue
                source, mutable = e["source"], e["policy"] == "mutable"
                if e.get("staged"):  # copied at the call
                    source = e["staged"]
                    d = _hash_file(source, None)
                    e["sha256"], e["size"] = d["sha256"], d["size"]
                    files.append({"path": path, "source": source, **d})
                    continue
                try:
                    st = os.stat(source)
                except FileNotFoundError:  # deleted (or renamed) after the call
                    raise _rewritten(path) from None
                if mutable and _identity(st) != e["identity"]:
                    raise _rewritten(path)
                sha = cache.lookup(st)
                copy = staging and mutable and not (sha and cache.held(server, entity, sha))
                if sha is None or copy:
                    target = os.path.join(staging, str(i)) if copy else None
                    d = cache.hash_file(source, target)  # hashes what it copies
                    sha, size = d["sha256"], d["size"]
                    if mutable and (_identity(os.stat(source)) != e["identity"]
                                    or size != st.st_size):
                        raise _rewritten(path)
                    if target:
                        source = target
                else:
                    size = st.st_size
                e["sha256"], e["size"] = sha, size
                files.append({"path": path, "sha256": sha, "size": size, "source": source})
            intent = {"id": self._id, "name": self.name, "type": self.type,
                      "metadata": _metadata(self.metadata), "aliases": self.aliases, "files": files}
            intent.update({k: v for k, v in (("description", self.description),
                                             ("staging", staging)) if v})
            previous, self._previous = self._previous, None
            if previous is not None and previous._thread is not None:
                previous._thread.join()
            self._run._log_artifact_intent(json.dumps(intent))
        except BaseException as e:  # noqa: BLE001 - reported by wait() and finish()
            self._error = e
            if staging:  # nothing was handed over: the copies made so far go
                shutil.rmtree(staging, ignore_errors=True)
        finally:
            if self._tmp_dir:
                shutil.rmtree(self._tmp_dir, ignore_errors=True)
                self._tmp_dir = None

    def _join(self, timeout: Optional[float]) -> bool:
        if self._thread is None:
            return True
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def wait(self, timeout: Optional[float] = None) -> "Artifact":
        """Blocks until the version is committed (then ``version``, ``digest`` and ``size`` are
        set) and returns the artifact. Raises ArtifactError when the upload or the commit
        failed (with the server's message), CommError when ``timeout`` (seconds) passed."""
        if self._id is None:
            raise ValueError(f"artifact {self.name}: not logged (run.log_artifact first)")
        start = time.monotonic()
        if not self._join(timeout):
            from .errors import CommError
            raise CommError(f"artifact {self.name}: still hashing after {timeout} s")
        if self._error is not None:
            raise ArtifactError(f"artifact {self.name}: {self._error}") from self._error
        left = -1.0 if timeout is None else max(0.0, timeout - (time.monotonic() - start))
        try:
            state = self._run._wait_artifact(self._id, left)
        except Error as e:
            if getattr(e, "code", None) == "failed_precondition":
                raise ArtifactError(self._explain(str(e))) from None
            raise
        self._note_state(state)
        return self

    def _explain(self, error: str) -> str:
        """The failure `error` of the upload, with what to do when a file added with
        policy="immutable" changed before it was uploaded (the server got other bytes)."""
        if "not the blob announced" in error:
            for path, e in sorted(self._entries.items()):
                if e.get("policy") == "immutable" and f" {path}: " in f" {error}":
                    return (f"artifact {self.name}: {path} changed after log_artifact "
                            f"(policy='immutable' uploads the file in place): log it again, "
                            f"or use the default policy='mutable'")
        return error

    def _note_state(self, state: Dict[str, Any]) -> None:
        self._state = state
        failed = state.get("state") == "failed" and state.get("error")
        if failed:
            state["error"] = self._explain(str(state["error"]))
        if failed and "not the blob announced" in str(failed):
            # A digest the hash cache gave named other bytes than the file's (rewritten without
            # moving its modification time): the entries go, so logging it again reads it.
            for e in self._entries.values():
                for source in (e.get("source"), e.get("local")):
                    try:
                        if source:
                            hash_cache().forget(os.stat(source))
                    except OSError:
                        pass
        if state.get("state") == "committed":
            self.version = state.get("version")
            self.digest = state.get("digest")
            self.size = state.get("size")
            held = [e["sha256"] for e in self._entries.values() if e.get("sha256")]
            hash_cache().note_held(self._server(), self._run.entity, held)

    @property
    def state(self) -> Dict[str, Any]:
        """Where the upload stands: {"state": "hashing"|"queued"|"pending"|"committed"|"failed",
        "bytes_done", "bytes_total", "files_done", "files_total", "version", "error", ...}."""
        if self._id is None:
            return {"state": "draft"}
        if self._thread is not None and self._thread.is_alive():
            return {"state": "hashing"}
        if self._error is not None:
            return {"state": "failed", "error": str(self._error)}
        state = self._run._artifact_state(self._id)
        self._note_state(state)
        return state


def log_artifact(run: Any, artifact_or_path: Any, name: Optional[str] = None,
                 type: Optional[str] = None, aliases: Optional[List[str]] = None) -> Artifact:
    """run.log_artifact: see Run.log_artifact."""
    if aliases is None:
        aliases = []
    if isinstance(aliases, str) or not all(isinstance(a, str) for a in aliases):
        raise ValueError("log_artifact: aliases must be a list of str")
    aliases = [a for a in aliases if a != "latest"]  # latest moves by itself
    for a in aliases:
        check_alias(a)
    if isinstance(artifact_or_path, Artifact):
        artifact = artifact_or_path
        # Everything checked before the artifact changes: one already logged (perhaps still
        # hashing) must keep the name and type it is being committed under.
        artifact._check_open()
        if name is not None:
            _check_name(name, "artifact name")
        if type is not None:
            _check_name(type, "artifact type")
        if not artifact._entries:
            raise ValueError(f"artifact {artifact.name}: no files added")
        if name is not None:
            artifact.name = name
        if type is not None:
            artifact.type = type
    elif isinstance(artifact_or_path, (str, os.PathLike)):
        path = os.fspath(artifact_or_path)
        default = re.sub(r"[^A-Za-z0-9_.-]", "-", os.path.basename(os.path.abspath(path)))
        artifact = Artifact(name or default.lstrip(".") or "artifact", type or "unspecified")
        if os.path.isdir(path):
            artifact.add_dir(path)
        elif os.path.isfile(path):
            artifact.add_file(path)
        else:
            raise ValueError(f"log_artifact: {path!r} is neither a file nor a directory")
    else:
        raise ValueError("log_artifact: expected a cohort.Artifact or a path, got "
                         f"{artifact_or_path.__class__.__name__}")
    artifact._start(run, list(dict.fromkeys(aliases)))
    return artifact
