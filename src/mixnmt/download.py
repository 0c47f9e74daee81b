"""Fetch a dataset file from its address or a mirror, verify its size and sha256, rename atomically."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
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


class _Late(Exception):
    """The download ran past its deadline."""


class _TooLarge(Exception):
    """The server offered or sent more bytes than the file's pinned size."""


def _copy(url: str, dest: Path, size: int, timeout: float, until: float) -> str:
    """Stream `url` into `dest`, giving up at time.monotonic() `until` or past `size`
    bytes; return the sha256 of the bytes received. A failure to write `dest` (a full
    disk) is not the network's: it goes to the caller as it is."""
    digest = hashlib.sha256()
    with _network(url):
        response = urllib.request.urlopen(url, timeout=timeout)
    with response, open(dest, "wb") as out:
        expected = response.headers.get("Content-Length")
        if expected is not None and expected.isdigit() and int(expected) > size:
            raise _TooLarge(f"offers {expected} bytes")
        received = 0
        while True:
            with _network(url):
                block = response.read1(CHUNK)  # what has arrived: a trickle still meets the deadline
            if not block:
                break
            if time.monotonic() > until:
                raise _Late
            if received + len(block) > size:
                raise _TooLarge("sent more")
            digest.update(block)
            out.write(block)
            received += len(block)
    if expected is not None and received != int(expected):
        raise _Transient(f"truncated: received {received} of {expected} bytes")
    return digest.hexdigest()


@contextlib.contextmanager
def _network(url: str) -> Iterator[None]:
    """Network failures as _Transient (worth retrying) or MixnmtError (final)."""
    try:
        yield
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


def download(
    url: str,
    dest: str | Path,
    sha256: str,
    size: int,
    retries: int = 4,
    backoff: float = 1.0,
    timeout: float = 30.0,
    deadline: float = 600.0,
) -> None:
    """Download `url` to `dest` and check its sha256; `dest` appears only if all is well.

    Transient failures are retried `retries` times with exponential backoff
    (`backoff`, 2 * `backoff`, ...); a checksum mismatch, a missing file, a full disk,
    more than `size` bytes (the disk is never filled with garbage) or running past
    `deadline` seconds (all attempts together) is final.
    """
    dest = Path(dest)
    until = time.monotonic() + deadline
    for attempt in range(retries + 1):
        try:
            with atomic_path(dest) as tmp:
                actual = _copy(url, tmp, size, timeout, until)
                if actual != sha256:
                    raise MixnmtError(f"{dest}: sha256 mismatch for {url}: expected {sha256}, got {actual}")
        except _TooLarge as e:
            raise MixnmtError(f"{dest}: the config pins {size} bytes, but {url} {e}; stopped there") from None
        except _Late:
            raise MixnmtError(
                f"{dest}: download from {url} did not finish within {deadline:.0f} s; "
                "try again later or use a mirror (config: mirror)"
            ) from None
        except _Transient as e:
            wait = backoff * 2**attempt
            if attempt == retries or time.monotonic() + wait > until:
                raise MixnmtError(
                    f"{dest}: download from {url} failed after {attempt + 1} attempts ({e}); "
                    "offline, point the workflow at a copy: --config mirror=DIR"
                ) from None
            log.warning("%s: attempt %d failed (%s); retrying in %.1fs", url, attempt + 1, e, wait)
            time.sleep(wait)
        else:
            log.info("%s -> %s (sha256 verified)", url, dest)
            return
