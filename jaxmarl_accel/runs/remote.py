"""Remote run folders: ``--out gs://bucket/runs/qmix`` (any fsspec URL: ``gs://`` with
``gcsfs`` installed, ``s3://`` with ``s3fs``, ``file://``, ...).

A run whose folder is remote is written, exactly as a local run, to a local *stage*
folder, and :meth:`Mirror.push` brings the remote folder up to date with it: after the run's
folder is prepared, after every checkpoint (once that chunk's metrics are written) and at
the end. ``--resume URL`` and ``jaxmarl-accel evaluate URL`` first download the remote
folder into the stage (:meth:`Mirror.pull`); evaluation files written into the run folder
are uploaded after it.

Why a stage rather than remote paths throughout: the replay's streaming writer
(:mod:`~jaxmarl_accel.runs.array_files`) writes each shard at its offset in a file of the
final size, ``piece_bytes`` at a time, which object stores cannot do; staging keeps one
writer, its memory bound and the exact resume for local and remote folders alike, at the
cost of the run folder's size on the local disk.

Order: each push deletes the index (``checkpoint.json``) of every checkpoint the stage no
longer has first, uploads every new or changed file with the indexes last, then deletes
the rest of what the stage no longer has. An upload that is cut leaves a checkpoint
without its index, which a resume skips as it skips a local checkpoint cut while saving
(``.partial`` folders are never uploaded). A file counts as changed when its size or
modification time differs from when it was last uploaded or downloaded.

Only files a run writes are ever deleted remotely: those this mirror uploaded or
downloaded, and with ``--overwrite`` the remote run's own entries
(:data:`~jaxmarl_accel.runs.outputs.RUN_ENTRIES`). Several processes
(``--distributed``) need one file system every process sees; a remote folder is refused
there.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import shutil
from collections.abc import Callable
from typing import Any

from jaxmarl_accel.runs.checkpoint import INDEX_NAME, PARTIAL_SUFFIX

STAGE_DEFAULT = "~/.cache/jaxmarl_accel/stage/<scheme>/<path>"
"""How ``--help`` shows :func:`default_stage`."""

Signature = tuple[int, int]
"""A local file's ``(size in bytes, modification time in ns)``."""


def is_remote(path: str) -> bool:
    """``path`` is a URL (``scheme://...``) rather than a local path."""
    scheme, sep, _ = path.partition("://")
    return bool(sep) and scheme.replace("+", "").replace("-", "").isalnum()


def default_stage(url: str) -> str:
    """The stage folder of ``url`` under ``$XDG_CACHE_HOME`` (default ``~/.cache``):
    ``jaxmarl_accel/stage/<scheme>/<rest of the URL>``."""
    scheme, _, rest = url.partition("://")
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    parts = [p for p in rest.split("/") if p not in ("", ".", "..")]
    return os.path.join(cache, "jaxmarl_accel", "stage", scheme, *parts)


def filesystem(url: str) -> tuple[Any, str]:
    """The fsspec file system of ``url`` and the folder's path on it; ``ValueError`` (one
    line) when fsspec does not know the scheme or its package is not installed."""
    import fsspec

    try:
        fs, root = fsspec.core.url_to_fs(url)
    except (ImportError, ValueError) as error:
        text = (str(error).strip().splitlines() or [type(error).__name__])[0]
        extra = ("; the gcs extra installs it: pip install '.[gcs]'" if url.startswith("gs://")
                 else "")
        raise ValueError(f"{url} cannot be opened ({text}){extra}") from None
    return fs, root.rstrip("/")


def _is_index(rel: str) -> bool:
    return posixpath.basename(rel) == INDEX_NAME


class Mirror:
    """A remote run folder and its local stage.

    Args:
      url: the remote folder (``scheme://...``).
      stage: the local folder the run is written to.
      run_entries: top-level names a run writes (config, metrics, checkpoints, ...); with
        :meth:`forget_remote_run` these are deleted remotely at the next push.
    """

    def __init__(self, url: str, stage: str, run_entries: tuple[str, ...] = ()):
        self.url, self.stage = url.rstrip("/"), stage
        self.run_entries = run_entries
        self.fs, self.root = filesystem(self.url)
        self.known: dict[str, Signature | None] = {}
        """Remote files this mirror may delete: rel path -> the local signature it was
        uploaded or downloaded with (None: not the stage's file, delete it at the next push)."""

    def _remote(self, rel: str) -> str:
        return posixpath.join(self.root, rel)

    def remote_files(self) -> list[str]:
        """Every file under the remote folder, as paths relative to it (sorted)."""
        if not self.fs.exists(self.root):
            return []
        prefix = self.root + "/"
        return sorted(path[len(prefix):] for path in self.fs.find(self.root)
                      if path.startswith(prefix))

    def remote_run_entries(self) -> list[str]:
        """The run entries present in the remote folder (none: it holds no run)."""
        tops = {rel.split("/", 1)[0] for rel in self.remote_files()}
        return [name for name in self.run_entries if name in tops]

    def forget_remote_run(self) -> None:
        """Mark the remote run's files (its run entries) for deletion at the next push."""
        for rel in self.remote_files():
            if rel.split("/", 1)[0] in self.run_entries:
                self.known.setdefault(rel, None)

    def local_files(self) -> dict[str, Signature]:
        """The stage's files (rel path -> signature), without ``.partial`` folders."""
        found: dict[str, Signature] = {}
        for folder, dirs, files in os.walk(self.stage):
            dirs[:] = [d for d in dirs if not d.endswith(PARTIAL_SUFFIX)]
            for name in files:
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, self.stage).replace(os.sep, "/")
                info = os.stat(path)
                found[rel] = (info.st_size, info.st_mtime_ns)
        return found

    def pull(self) -> int:
        """Make the stage a copy of the remote folder (the stage's own files are removed
        first); returns the number of files downloaded. ``ValueError`` when the remote
        folder holds nothing."""
        rels = self.remote_files()
        if not rels:
            raise ValueError(f"{self.url} holds no files")
        shutil.rmtree(self.stage, ignore_errors=True)
        os.makedirs(self.stage)
        for rel in rels:
            local = os.path.join(self.stage, *rel.split("/"))
            os.makedirs(os.path.dirname(local), exist_ok=True)
            self.fs.get_file(self._remote(rel), local)
        self.known = dict(self.local_files())
        return len(rels)

    def push(self) -> int:
        """Upload the stage's new and changed files and delete what it no longer has (in
        the order of the module docstring); returns the number of files uploaded."""
        local = self.local_files()
        gone = [rel for rel in self.known if rel not in local]
        for rel in gone:
            if _is_index(rel):
                self._delete(rel)
        changed = [rel for rel, sig in local.items() if self.known.get(rel) != sig]
        made: set[str] = set()
        for rel in sorted(changed, key=lambda r: (_is_index(r), r)):
            target = self._remote(rel)
            if posixpath.dirname(target) not in made:  # a no-op on object stores
                self.fs.makedirs(posixpath.dirname(target), exist_ok=True)
                made.add(posixpath.dirname(target))
            self.fs.put_file(os.path.join(self.stage, *rel.split("/")), target)
            self.known[rel] = local[rel]
        for rel in gone:
            if not _is_index(rel):
                self._delete(rel)
        self._remove_empty_folders({posixpath.dirname(rel) for rel in gone})
        return len(changed)

    def _delete(self, rel: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.fs.rm_file(self._remote(rel))
        self.known.pop(rel, None)

    def _remove_empty_folders(self, rels: set[str]) -> None:
        """Remove the folders (and their parents, inside the run folder) that deletions left
        empty, on file systems that have folders (object stores have none to remove)."""
        todo = set()
        for rel in rels:
            while rel:
                todo.add(rel)
                rel = posixpath.dirname(rel)
        for rel in sorted(todo, key=lambda r: -r.count("/")):
            path = self._remote(rel)
            try:
                if self.fs.isdir(path) and not self.fs.ls(path):
                    self.fs.rmdir(path)
            except (FileNotFoundError, NotImplementedError, OSError):
                pass


def mirror_for_run(out: str | None, resume: str | None, overwrite: bool, stage: str | None,
                   distributed: bool) -> Mirror | None:
    """The :class:`Mirror` of a run whose ``--out`` or ``--resume`` is a URL (None for a
    local folder), its stage ready: downloaded for ``--resume``; for a new run, the stage's
    own earlier run removed and the remote checked (a remote run is refused without
    ``overwrite``, and marked for deletion with it). ``ValueError`` (one line, naming the
    flag) for a remote folder that holds no run to resume or a run without ``overwrite``,
    an unknown scheme, several processes, or ``--stage`` without a URL."""
    from jaxmarl_accel.runs.outputs import RUN_ENTRIES, clear_run

    url = resume or out
    if resume and overwrite:
        return None  # a usage error, reported by the caller
    if url is None or not is_remote(url):
        if stage is not None:
            raise ValueError("--stage is for a remote --out or --resume URL only")
        return None
    flag = "--resume" if resume else "--out"
    if distributed:
        raise ValueError(f"{flag} {url}: a remote folder is written by one process; several "
                         "processes need a folder on a file system every process sees")
    if resume:
        return pulled_run(url, stage, f"--resume {url}")
    mirror = Mirror(url, stage or default_stage(url), RUN_ENTRIES)
    present = mirror.remote_run_entries()
    if present and not overwrite:
        raise ValueError(f"--out {url} holds a run already ({', '.join(present)}); continue it "
                         f"with --resume {url}, or replace it with --overwrite")
    if overwrite:
        mirror.forget_remote_run()
    if os.path.isdir(mirror.stage):
        clear_run(mirror.stage)
    return mirror


def pulled_run(url: str, stage: str | None, name: str,
               log: Callable[[str], None] = lambda text: None) -> Mirror:
    """The :class:`Mirror` of the run at ``url``, downloaded into ``stage`` (default
    :func:`default_stage`; ``log`` is told before the download); ``ValueError`` (one line,
    naming it as ``name``) when the remote folder holds no run's ``config.json``."""
    from jaxmarl_accel.runs.outputs import CONFIG_NAME, RUN_ENTRIES

    mirror = Mirror(url, stage or default_stage(url), RUN_ENTRIES)
    if CONFIG_NAME not in mirror.remote_run_entries():
        raise ValueError(f"{name} holds no run ({CONFIG_NAME} is missing)")
    log(f"downloading {url} into {mirror.stage}...")
    mirror.pull()
    return mirror


__all__ = ["Mirror", "default_stage", "filesystem", "is_remote", "mirror_for_run", "pulled_run"]
