"""File helpers: atomic writes, checksums, strict line reading, JSON and TSV files."""

from __future__ import annotations

import contextlib
import errno
import glob
import gzip
import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from mixnmt import MixnmtError

if TYPE_CHECKING:  # pandas takes half a second to import: the jobs that read no table skip it
    import pandas as pd

GZIP_MAGIC = b"\x1f\x8b"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


FILE_MODE = 0o666 & ~_umask()  # what open() would give a new file; mkstemp gives 0o600


WRITE_ERRORS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EIO}


def refuse_links(root: str | os.PathLike) -> None:
    """Raise MixnmtError naming the first symbolic link inside folder `root` (which may be
    a link itself): Snakemake writes benchmark files through a link planted at their
    path, so a link committed under results/ could make a rebuild overwrite any file."""
    for folder, dirs, files in os.walk(root):  # does not follow links into other folders
        for name in sorted(dirs + files):
            path = Path(folder, name)
            if path.is_symlink():
                raise MixnmtError(
                    f"{path}: a symbolic link inside {root}; the workflow would write through it "
                    f"(remove it; to keep results elsewhere, link {root} itself)"
                )


class Output(type(Path())):  # type: ignore[misc]  (PosixPath or WindowsPath, as Path() is)
    """A path a command writes (argparse `type=Output`); any other path it is given, it reads."""


def distinct(inputs: Iterable[str | os.PathLike], outputs: Iterable[str | os.PathLike]) -> None:
    """Raise MixnmtError, naming the file, if an output of a command is also one of its
    inputs or another of its outputs (symbolic links resolved): no output may overwrite
    what the command reads, or what it writes elsewhere."""
    written: dict[str, str] = {}
    for path in outputs:
        real = os.path.realpath(path)
        if real in written:
            raise MixnmtError(
                f"{path}: named as two outputs ({written[real]} and {path}); give each its own file"
            )
        written[real] = str(path)
    for path in inputs:
        if os.path.realpath(path) in written and not Path(path).is_dir():
            raise MixnmtError(f"{path}: both an input and an output; refusing to overwrite what is read")


def gist(error: BaseException, limit: int = 160) -> str:
    """The last line of an exception's message (its type if it has none), cut to `limit`
    characters: the part of a library's multi-line error worth one line of ours."""
    lines = str(error).strip().splitlines()
    text = lines[-1].strip() if lines else type(error).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def remove_leftovers(path: str | os.PathLike) -> None:
    """Remove the temporary files that killed writers of `path` left (`.<name>.*.tmp`;
    one output has one writer at a time)."""
    path = Path(path)
    for leftover in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
        leftover.unlink(missing_ok=True)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to `path`; rename it onto `path` only on success.

    On any exception the temporary file is removed, so a failed write never leaves a
    partial `path` behind and an existing `path` is left untouched; a failure to write
    (a full disk) is an error naming `path`. Temporary files that killed writers left
    beside `path` are removed first.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    existed = path.exists()
    remove_leftovers(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.fchmod(fd, FILE_MODE)
    os.close(fd)
    tmp = Path(tmp)
    try:
        yield tmp
        os.replace(tmp, path)
    except OSError as e:
        ours = e.filename in (str(tmp), str(path))
        if not ours and (e.filename is not None or e.errno not in WRITE_ERRORS):
            raise  # another file's (an input read while writing) or the network's: the caller's
        kept = "; the previous version is kept" if existed else ""
        raise MixnmtError(f"{path}: could not write ({e.strerror or e}){kept}") from None
    finally:
        tmp.unlink(missing_ok=True)


def put_lines(path: str | os.PathLike, lines: Iterable[str]) -> None:
    """Write `lines`, each terminated by a newline, as UTF-8, in place (inside an
    `atomic_path`); a failed write names `path`."""
    try:
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            for line in lines:
                f.write(line)
                f.write("\n")
    except OSError as e:
        if e.filename is not None:
            raise  # another file's, read by `lines` as it goes
        raise OSError(e.errno, e.strerror, str(path)) from None


def write_lines(path: str | os.PathLike, lines: Iterable[str]) -> None:
    """Atomically write `lines`, each terminated by a newline, as UTF-8."""
    with atomic_path(path) as tmp:
        put_lines(tmp, lines)


def write_text(path: str | os.PathLike, text: str) -> None:
    """Atomically write `text` as UTF-8."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def sha256sum(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def read_bounded(stream: BinaryIO, name: str, limit: int | None) -> bytes:
    """All of `stream`, refused naming it once it holds more than `limit` bytes (None: any
    size): a device such as /dev/zero never ends."""
    data = stream.read() if limit is None else stream.read(limit + 1)
    if limit is not None and len(data) > limit:
        raise MixnmtError(f"{name}: more than {limit // 2**20} MiB; refused (split it)")
    return data


def read_lines(path: str | os.PathLike, limit: int | None = None) -> list[str]:
    """Lines of a UTF-8 text file, gzip-compressed or not, of at most `limit` bytes if given.

    Only line breaks end a line (\\n, \\r\\n or a lone \\r); other Unicode separators
    such as U+2028 stay inside their line. A final line break does not add an empty
    line. Invalid UTF-8 is an error naming the file and line.
    """
    path = Path(path)
    with open(path, "rb") as f:
        data = read_bounded(f, str(path), limit)
    if data[:2] == GZIP_MAGIC:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as e:
            raise MixnmtError(f"{path}: not a valid gzip file ({e})") from None
    return split_lines(data, str(path))


def split_lines(data: bytes, name: str, first: int = 1) -> list[str]:
    """The lines of UTF-8 text `data` (see `read_lines`); `name` says where it came from,
    `first` is the number of its first line."""
    if not data:
        return []
    data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + first
        raise MixnmtError(f"{name}: invalid UTF-8 at line {line}") from None
    return text.removesuffix("\n").split("\n")


def write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Atomically write `data`."""
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def read_json(path: str | os.PathLike) -> Any:
    """The contents of a JSON file; an unreadable file is an error naming it."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise MixnmtError(f"{path}: not a readable JSON file ({e})") from None


def write_json(path: str | os.PathLike, value: Any, indent: int | None = 2) -> None:
    """Atomically write `value` as JSON (indented unless `indent` is None), newline-terminated."""
    write_text(path, json.dumps(value, indent=indent) + "\n")


def read_table(path: str | os.PathLike, columns: Iterable[str] = ()) -> pd.DataFrame:
    """A tab-separated table with a header line and (at least) `columns`; an unreadable
    table, or one without them, is an error naming the file."""
    import pandas as pd

    try:
        table = pd.read_csv(path, sep="\t")
    except (OSError, UnicodeDecodeError, pd.errors.EmptyDataError, pd.errors.ParserError) as e:
        raise MixnmtError(f"{path}: not a readable tab-separated table ({gist(e)})") from None
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise MixnmtError(f"{path}: expected the columns {', '.join(columns)}; missing {', '.join(missing)}")
    return table


def write_table(path: str | os.PathLike, table: pd.DataFrame) -> None:
    """Atomically write `table` tab-separated, with a header line and no index."""
    with atomic_path(path) as tmp:
        table.to_csv(tmp, sep="\t", index=False)
