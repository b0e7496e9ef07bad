"""numba's ``njit`` for kvtheory's kernels, behind a check that numba's on-disk cache holds code compiled from the
kernel sources as they are now.

numba keys each cached kernel by its own source file alone: a kernel that calls a ``@njit`` function of another
file compiles that function into itself, and keeps running its old code from the cache after the other file
changes (a limit of its cache invalidation that numba documents). A checkout
updated in place, or a kernel edited, could then run stale code, or crash the compiler on a cache that no longer
fits. So the first import of a kernel module in a process (each takes :data:`njit` from here, and
``tests/repository/test_kernel_cache.py`` checks that none takes numba's directly) compares :func:`kernels_digest`,
a SHA-256 of every kernel source of the package, with the digest recorded in each folder where numba caches them
(:data:`STAMP`); where it differs, it deletes those kernels' cached index and code there (``STEM.*.nbi``,
``STEM.*.nbc``) and records the new digest, so that each kernel compiles afresh from the current sources once. The
folders are numba's own choice for each source (its cache locators, in its order: ``NUMBA_CACHE_DIR``, the
``__pycache__`` beside the file, the user-wide cache).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from numba import njit
from numba.core import caching

PACKAGE = Path(__file__).resolve().parent
#: what marks a kernel source: a module of the package that takes ``njit`` from here
MARK = b"from kvtheory.jit import njit"
#: the file, in each cache folder of kvtheory's kernels, that names the sources their cache was compiled from
STAMP = "kvtheory-kernels.digest"

__all__ = ["njit"]


def kernel_sources(package: Path = PACKAGE) -> list[Path]:
    """Every module of ``package`` that takes ``njit`` from here (this one aside), sorted."""
    here = Path(__file__).resolve()
    return [path for path in sorted(package.rglob("*.py")) if path != here and MARK in path.read_bytes()]


def kernels_digest(sources: list[Path], package: Path = PACKAGE) -> str:
    """SHA-256 of ``sources``, each by its path inside ``package`` and its contents."""
    digest = hashlib.sha256()
    for path in sources:
        digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _probe() -> None:
    """A function to show numba's cache locators (they read only its line number)."""


def cache_folder(source: Path) -> Path | None:
    """The folder numba caches the kernels of ``source`` in (the first of its locators that can), or None."""
    for locator_class in (caching.UserProvidedCacheLocator, caching.InTreeCacheLocator, caching.UserWideCacheLocator):
        locator = locator_class.from_function(_probe, str(source))
        if locator is not None:
            return Path(locator.get_cache_path())
    return None


def refresh_cache(package: Path = PACKAGE) -> list[Path]:
    """Delete the cached kernels of ``package`` (kvtheory by default) in every folder whose :data:`STAMP` does not
    name their current sources, and stamp it; return the cache files deleted."""
    sources = kernel_sources(package)
    digest = kernels_digest(sources, package)
    folders: dict[Path, list[str]] = {}
    for source in sources:
        folder = cache_folder(source)
        if folder is not None:
            folders.setdefault(folder, []).append(source.stem)
    deleted = []
    for folder, stems in folders.items():
        stamp = folder / STAMP
        try:
            if stamp.read_text().strip() == digest:
                continue
        except OSError:
            pass
        for stem in stems:
            for pattern in (f"{stem}.*.nbi", f"{stem}.*.nbc"):
                for cached in folder.glob(pattern):
                    cached.unlink(missing_ok=True)
                    deleted.append(cached)
        try:
            stamp.write_text(digest + "\n")
        except OSError:  # a folder numba can write to but we cannot stamp: checked again by the next process
            pass
    return deleted


refresh_cache()
