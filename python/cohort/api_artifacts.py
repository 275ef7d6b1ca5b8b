"""Artifact versions as read from the server: what ``run.use_artifact`` and
``cohort.Api().artifact`` return (docs/python-api.md, "Artifacts"; the contract is
docs/artifacts.md).

::

    model = run.use_artifact("resnet:best")        # records that this run used it
    path = model.download()                        # ./artifacts/resnet:v3, verified and cached
    ckpt = model.get_path("model.pt")              # one file

    api = cohort.Api()
    for v in api.artifact_versions("resnet", project="alice/vision"):
        print(v.version, v.aliases, v.size)

Threading: an ``ArtifactVersion`` uses its ``Api``'s connection for reads of the manifest and a
connection per download thread for file bytes; like the ``Api``, use one per thread.
"""
from __future__ import annotations

import hashlib
import os
import re
import threading
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

from . import artifact_download as dl
from .api_http import AuthError, Transport, quote
from .errors import UsageError

__all__ = ["ArtifactCollection", "ArtifactFile", "ArtifactVersion", "parse_artifact_path"]

_NAME = re.compile(r"^[A-Za-z0-9_\-][A-Za-z0-9._\-]{0,127}$")


def parse_artifact_path(path: str) -> Tuple[Optional[str], Optional[str], str, str]:
    """``[[entity/]project/]name[:version_or_alias]`` -> (entity or None, project or None,
    name, version_or_alias); without ``:`` the version is ``latest``."""
    if not isinstance(path, str) or not path.strip("/"):
        raise UsageError(f"artifact: expected 'name:alias', 'name:v3' or "
                         f"'entity/project/name:alias', got {path!r}")
    segs = path.strip("/").split("/")
    if len(segs) > 3 or any(not s for s in segs):
        raise UsageError(f"artifact: expected at most 'entity/project/name:alias', got {path!r}")
    last = segs[-1]
    name, sep, version = last.partition(":")
    if sep and not version:
        raise UsageError(f"artifact {path!r}: nothing after ':' (give an alias or v<N>)")
    if not _NAME.match(name):
        raise UsageError(f"artifact {path!r}: the name {name!r} must be 1-128 characters of "
                         "A-Z a-z 0-9 . _ - not starting with '.'")
    entity = segs[0] if len(segs) == 3 else None
    project = segs[-2] if len(segs) >= 2 else None
    return entity, project, name, version or "latest"


def collection_api_path(entity: str, project: str, name: Optional[str] = None) -> str:
    path = f"/api/v1/artifacts/{quote(entity)}/{quote(project)}"
    return path + (f"/{quote(name)}" if name is not None else "")


class ArtifactFile(NamedTuple):
    """One manifest entry: a blob (`sha256`, `size`) or a reference (`ref`, `digest`)."""

    path: str
    size: int
    sha256: str
    ref: str
    digest: str


class ArtifactVersion:
    """One committed version of an artifact collection: ``name``, ``type``, ``version``
    (``"v3"``), ``aliases``, ``digest`` (of the manifest), ``size`` (bytes of its files),
    ``metadata``, ``description``, ``created_ms``, ``run`` and ``writer`` (who logged it)."""

    def __init__(self, transport: Transport, data: Dict[str, Any]):
        self._t = transport
        #: What the last download()/get_path() did: {"root", "files", "bytes",
        #: "fetched_bytes"} (bytes that came from the server, not the cache or a partial file).
        self.last_download: Optional[Dict[str, Any]] = None
        self._load(data)

    def _load(self, data: Dict[str, Any]) -> None:
        self._data = data
        self.entity: str = data["entity"]
        self.project: str = data["project"]
        self.name: str = data["name"]
        self.type: str = data.get("type", "")
        self.version: str = data["version"]
        self.index: int = data.get("index", 0)
        self.aliases: List[str] = list(data.get("aliases", []))
        self.digest: str = data.get("digest", "")
        self.size: int = data.get("size", 0)
        self.file_count: int = data.get("file_count", 0)
        self.metadata: Dict[str, Any] = data.get("metadata") or {}
        self.description: str = data.get("description") or ""
        self.created_ms: int = data.get("created_ms", 0)
        self.run: Optional[str] = data.get("run") or None
        self.writer: Optional[str] = data.get("writer") or None
        self._files: Optional[List[ArtifactFile]] = None
        if isinstance(data.get("files"), list):
            self._files = [_entry(f) for f in data["files"]]

    @property
    def qualified_name(self) -> str:
        """``entity/project/name:v3``."""
        return f"{self.entity}/{self.project}/{self.name}:{self.version}"

    @property
    def _api_path(self) -> str:
        return collection_api_path(self.entity, self.project, self.name) + "/" + quote(
            self.version)

    @property
    def used_by(self) -> List[Dict[str, Any]]:
        """[{"run", "writer", "used_ms"}]: the runs that used this version."""
        return list(self._data.get("used_by", []))

    def refresh(self) -> "ArtifactVersion":
        """Reads the version again (aliases, lineage)."""
        self._load(self._t.get(self._api_path))
        return self

    def delete(self, delete_aliases: bool = False) -> None:
        """Deletes this version on the server (``DELETE .../{name}/{version}``, admin keys only;
        wandb's ``Artifact.delete``): its manifest and aliases go, ``latest`` moves back to the
        newest remaining version, its blobs stay until ``cohort gc``. It cannot be undone. As
        in wandb, a version with aliases (other than ``latest``, which Cohort moves by itself)
        is refused unless ``delete_aliases=True``; the aliases are read from the server first.
        A member key raises AuthError naming the admin-key requirement; NotFound when the
        version is gone already."""
        what = f"ArtifactVersion.delete() of {self.qualified_name}"
        try:
            self._load(self._t.get(self._api_path))
            others = [a for a in self.aliases if a != "latest"]
            if others and not delete_aliases:
                raise UsageError(
                    f"{what}: the version has the aliases {', '.join(others)}: pass "
                    f"delete_aliases=True to delete them with it, or move them to another "
                    f"version first (PUT .../{self.name}/aliases/<alias>, docs/artifacts.md); "
                    f"nothing was deleted")
            self._t.call("DELETE", self._api_path)
        except AuthError as e:
            err = AuthError(f"{what} was refused: {e}. Deleting an artifact version needs an "
                            f"admin API key (cohort keys create --role admin); this key may "
                            f"read and log artifacts but not delete them")
            err.code = e.code
            raise err from e
        self.aliases = []

    def files(self) -> List[ArtifactFile]:
        """The manifest: one ``ArtifactFile(path, size, sha256, ref, digest)`` per file, by
        path."""
        if self._files is None:
            self.refresh()
        return list(self._files or [])

    def _file_url(self, entry: ArtifactFile) -> str:
        # The version, not an alias: an alias that moves during a download changes nothing.
        return self._api_path + "/files/" + "/".join(quote(s) for s in entry.path.split("/"))

    def default_root(self) -> str:
        """``./artifacts/<name>:<version>``."""
        return os.path.join("artifacts", f"{self.name}:{self.version}")

    def get_path(self, name: str, root: Optional[str] = None) -> str:
        """Downloads the one file `name` of this version (as ``download`` would, verified and
        cached) into `root` and returns its local path."""
        entry = next((f for f in self.files() if f.path == name), None)
        if entry is None:
            raise UsageError(f"{self.qualified_name} has no file {name!r}")
        return self._download([entry], root, dl.DEFAULT_WORKERS, None, True)[0]

    def download(self, root: Optional[str] = None, *, workers: int = dl.DEFAULT_WORKERS,
                 progress: Optional[bool] = None) -> str:
        """Downloads every file of the version into `root` (default
        ``./artifacts/<name>:<version>``) and returns that directory.

        Files come in parallel (`workers` threads) and are verified against their SHA-256
        before they are kept; see ``cohort.artifact_download`` for the cache and the resume.
        References: ``file://`` ones are copied from their path (checked against their size
        and, when it is a SHA-256, their digest); others (``s3://``, ``http(s)://``) are not
        downloaded (fetch them with the tools of their store; ``files()`` lists them).
        Progress shows on stderr when the download takes more than 2 s (``progress=False``:
        never). Files already in `root` with other names stay."""
        if not isinstance(workers, int) or workers < 1:
            raise UsageError(f"workers: expected a positive int, got {workers!r}")
        self._download(self.files(), root, workers, progress, False)
        return os.path.abspath(root if root is not None else self.default_root())

    def _download(self, entries: List[ArtifactFile], root: Optional[str], workers: int,
                  progress: Optional[bool], strict_refs: bool) -> List[str]:
        root = os.path.abspath(root if root is not None else self.default_root())
        targets = [_target(root, e.path) for e in entries]
        remote = [e for e in entries if e.ref and not e.ref.startswith("file:")]
        if remote and strict_refs:
            listed = ", ".join(f"{e.path} ({e.ref})" for e in remote[:5])
            raise UsageError(f"{self.qualified_name}: references are not downloaded; fetch "
                             f"them from their store: {listed}")
        total = sum(e.size for e in entries if not (e.ref and not e.ref.startswith("file:")))
        bar = dl.Progress(self.qualified_name, total, len(entries) - len(remote), progress)
        tasks = []
        for entry, target in zip(entries, targets):
            if entry.ref:
                if entry.ref.startswith("file:"):
                    tasks.append(_local_ref_task(self.qualified_name, entry, target, bar))
            else:
                tasks.append(self._blob_task(entry, target, bar))
        dl.run_parallel(tasks, self._t, workers)
        bar.finish()
        self.last_download = {"root": root, "files": bar.done_files, "bytes": bar.done_bytes,
                              "fetched_bytes": bar.fetched_bytes}
        return targets

    def _blob_task(self, entry: ArtifactFile, target: str, bar: dl.Progress):
        what = f"{self.qualified_name}: file {entry.path}"
        url = self._file_url(entry)

        def task(t: Transport, stop: threading.Event) -> None:
            dl.fetch_and_place(t, url, entry.sha256, entry.size, what, bar, stop, target)
        return task

    def __repr__(self) -> str:
        aliases = f" ({', '.join(self.aliases)})" if self.aliases else ""
        return f"<ArtifactVersion {self.qualified_name} type={self.type}{aliases}>"


def _local_ref_task(owner: str, entry: ArtifactFile, target: str, bar: dl.Progress):
    def task(t: Transport, stop: threading.Event) -> None:
        source = dl.file_url_path(entry.ref)
        what = f"{owner}: file {entry.path} (reference {entry.ref})"

        def unreadable(e: OSError) -> UsageError:
            return UsageError(f"{what}: cannot read {source}: {e.strerror}")

        def check(n: int, h: Any = None) -> None:
            if entry.size and n != entry.size:
                raise dl.VerificationError(f"{what}: {source} has {n} bytes, the manifest says "
                                           f"{entry.size}")
            if h is not None and dl._is_sha256(entry.digest) and h.hexdigest() != entry.digest:
                raise dl.VerificationError(f"{what}: {source} has SHA-256 {h.hexdigest()}, "
                                           f"the manifest says {entry.digest}: it changed since")

        def copy(tmp: str) -> bool:
            # Hashed in the same read as it is copied: what replaces the target is the bytes
            # that were checked, even if the file is rewritten meanwhile (the temporary file
            # goes when the check fails).
            nonlocal size
            h = hashlib.sha256()
            size = 0
            try:
                src = open(source, "rb")
            except OSError as e:
                raise unreadable(e) from e
            with src, open(tmp, "wb") as out:
                while True:
                    block = src.read(dl.READ_BYTES)
                    if not block:
                        break
                    h.update(block)
                    out.write(block)
                    size += len(block)
            check(size, h)
            return True

        try:
            size = os.path.getsize(source)
        except OSError as e:
            raise unreadable(e) from e
        check(size)  # a size that differs fails before anything is read
        try:
            in_place = os.path.samefile(source, target)
        except OSError:
            in_place = False
        if in_place:  # downloaded into its own place: checked, nothing to copy
            h = hashlib.sha256()
            size = dl._hash_file(source, h)
            check(size, h)
        else:
            os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
            dl._replace_with(target, copy)
        bar.add(size, 1, fetched=False)
    return task


def _entry(f: Dict[str, Any]) -> ArtifactFile:
    return ArtifactFile(path=f["path"], size=int(f.get("size") or 0),
                        sha256=f.get("sha256") or "", ref=f.get("ref") or "",
                        digest=f.get("digest") or "")


def _target(root: str, path: str) -> str:
    """root/path, refusing a path that would leave root (the server refuses them already)."""
    segs = path.split("/")
    if path.startswith("/") or any(s in ("", ".", "..") for s in segs) or "\\" in path:
        raise UsageError(f"artifact file {path!r}: not a relative path inside the version")
    return os.path.join(root, *segs)


class ArtifactCollection:
    """A collection of a project: ``name``, ``type`` and what the server says of it
    (``versions``: how many, ``latest``, ...); ``versions()`` lists them."""

    def __init__(self, transport: Transport, entity: str, project: str, data: Dict[str, Any]):
        self._t = transport
        self.entity, self.project = entity, project
        self.name: str = data["name"]
        self.type: str = data.get("type", "")
        self.data = data

    def __getattr__(self, key: str) -> Any:
        data = self.__dict__.get("data") or {}
        if key in data:
            return data[key]
        raise AttributeError(key)

    def versions(self) -> List[ArtifactVersion]:
        return list_versions(self._t, self.entity, self.project, self.name)

    def __repr__(self) -> str:
        return f"<ArtifactCollection {self.entity}/{self.project}/{self.name} type={self.type}>"


def list_versions(t: Transport, entity: str, project: str, name: str) -> List[ArtifactVersion]:
    """The versions of a collection, newest first as the server orders them."""
    page = t.get(collection_api_path(entity, project, name) + "/versions")
    items = page["versions"] if isinstance(page, dict) else page
    out = []
    for v in items:
        v = dict(v)
        v.setdefault("entity", entity)
        v.setdefault("project", project)
        v.setdefault("name", name)
        out.append(ArtifactVersion(t, v))
    return out


def list_collections(t: Transport, entity: str, project: str) -> List[ArtifactCollection]:
    page = t.get(collection_api_path(entity, project))
    items = page["collections"] if isinstance(page, dict) else page
    return [ArtifactCollection(t, entity, project, c) for c in items]


def read_version(t: Transport, entity: str, project: str, name: str,
                 version: str) -> ArtifactVersion:
    return ArtifactVersion(t, t.get(collection_api_path(entity, project, name) + "/" +
                                    quote(version)))


def use_version(t: Transport, entity: str, project: str, name: str, version: str,
                run_id: str, writer: str, run_project: str) -> ArtifactVersion:
    """POST .../use: records that run `run_id` of `run_project` (writer `writer`) used the
    version."""
    body = {"run": run_id, "project": run_project, "writer": writer}
    return ArtifactVersion(t, t.post(collection_api_path(entity, project, name) + "/" +
                                     quote(version) + "/use", body))
