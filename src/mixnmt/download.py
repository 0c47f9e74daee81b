"""Fetch a dataset file from its address or a mirror, verify its sha256, rename atomically."""

from __future__ import annotations

import hashlib
import logging
import time
import urllib.error
import urllib.request
from pathlib import Path

from mixnmt import MixnmtError
from mixnmt.files import atomic_path

log = logging.getLogger(__name__)

CHUNK = 1 << 16


def source_url(base: str, name: str) -> str:
    """Address of file `name` under `base`: an http(s):// or file:// URL, or a local folder."""
    if "://" in base:
        return f"{base.rstrip('/')}/{name}"
    return Path(base, name).resolve().as_uri()


class _Transient(Exception):
    """A failure worth retrying (network hiccup, server error, truncated transfer)."""


def _copy(url: str, dest: Path, timeout: float) -> str:
    """Stream `url` into `dest`; return the sha256 of the bytes received."""
    digest = hashlib.sha256()
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response, open(dest, "wb") as out:
            expected = response.headers.get("Content-Length")
            received = 0
            while block := response.read(CHUNK):
                digest.update(block)
                out.write(block)
                received += len(block)
    except urllib.error.HTTPError as e:
        if e.code >= 500 or e.code == 429:
            raise _Transient(f"HTTP {e.code}") from None
        raise MixnmtError(f"{url}: HTTP {e.code} {e.reason}") from None
    except urllib.error.URLError as e:
        if url.startswith("file:"):
            raise MixnmtError(f"{url}: {e.reason}") from None
        raise _Transient(str(e.reason)) from None
    except (OSError, EOFError) as e:  # timeouts, resets, http.client.IncompleteRead
        raise _Transient(repr(e)) from None
    if expected is not None and received != int(expected):
        raise _Transient(f"truncated: received {received} of {expected} bytes")
    return digest.hexdigest()


def download(
    url: str,
    dest: str | Path,
    sha256: str,
    retries: int = 4,
    backoff: float = 1.0,
    timeout: float = 60.0,
) -> None:
    """Download `url` to `dest` and check its sha256; `dest` appears only if all is well.

    Transient failures are retried `retries` times with exponential backoff
    (`backoff`, 2 * `backoff`, ...); a checksum mismatch or a missing file is final.
    """
    dest = Path(dest)
    for attempt in range(retries + 1):
        try:
            with atomic_path(dest) as tmp:
                actual = _copy(url, tmp, timeout)
                if actual != sha256:
                    raise MixnmtError(f"{dest}: sha256 mismatch for {url}: expected {sha256}, got {actual}")
        except _Transient as e:
            if attempt == retries:
                raise MixnmtError(
                    f"{dest}: download from {url} failed after {attempt + 1} attempts ({e})"
                ) from None
            wait = backoff * 2**attempt
            log.warning("%s: attempt %d failed (%s); retrying in %.1fs", url, attempt + 1, e, wait)
            time.sleep(wait)
        else:
            log.info("%s -> %s (sha256 verified)", url, dest)
            return
