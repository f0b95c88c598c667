"""``parquet:DIR``: items or page records as Parquet files (pyarrow, the optional extra ``webtrawl[parquet]``).

A Parquet file is only readable once its footer is written, so a file being filled cannot be appended to safely.
Each write is therefore appended to ``<prefix>-<seq>.parquet.open`` as one length-prefixed Arrow IPC stream (all or
nothing, like a JSONL line); when ``chunk`` rows are in, the frames are read back and written as one Parquet file
(zstd, row groups of up to ``chunk`` rows) to a temporary name, fsynced and renamed. A name ending in ``.parquet`` is
always a whole file; a kill leaves an ``.open`` file that is converted the same way when the sink opens again.

With ``--encrypt-to`` the frames are kept in memory and journalled encrypted (:mod:`webtrawl.store.outfile`), each
write as a small Parquet file of its own (what a kill leaves: recovered as ``<prefix>-<seq>-<k>.parquet.age``); the
sealed ``<prefix>-<seq>.parquet.age`` is the same conversion, made in memory, so no plaintext reaches the disk.

Columns are typed like the table sinks' (:mod:`.schema`): string, int64, double, bool, and JSON text (string) for
lists and objects; a value that does not fit its column goes to ``_extra`` (JSON text). The parser processes of a
crawl agree on a column's type, only when a field is new to one of them, through the crawl's Redis (``ctx.columns``,
shared by every node: their files are read together) or, without one (``trawl export``), through
``<out>/.parquet-columns/<digest of DIR>.json`` under a lock: the first to see a field types it for all, so a field
that is a number on one's first page and text on another's is one type in every file and
``pyarrow.parquet.read_table`` reads them all (it refused the mix). Files may still differ in columns; readers merge
them by name (DuckDB ``union_by_name``, Spark ``mergeSchema``).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from webtrawl.formats.sinkurl import SinkUrl
from webtrawl.optional import optional_import
from webtrawl.store.base import ColumnTypes, PageOutput, Sink, SinkContext
from webtrawl.store.recovery import OPEN_SUFFIX, fsync_dir
from webtrawl.store.sinks.files import SeriesSink, cut, resume_series, seal_sink_dir
from webtrawl.store.sinks.rows import RowMaker, Rows, What, keys_of
from webtrawl.store.sinks.schema import Kind, Schema
from webtrawl.wholefile import replace_whole

if TYPE_CHECKING:
    import pyarrow as pa

EXT = ".parquet"
_FRAME = struct.Struct("<Q")


def _pyarrow() -> Any:
    for module in ("pyarrow.ipc", "pyarrow.parquet"):
        optional_import(module, needed_by="the parquet sink", extra="parquet")
    return optional_import("pyarrow", needed_by="the parquet sink", extra="parquet")


def _arrow_type(kind: Kind) -> pa.DataType:
    pa = _pyarrow()
    types = {Kind.TEXT: pa.string(), Kind.BIGINT: pa.int64(), Kind.DOUBLE: pa.float64(), Kind.BOOLEAN: pa.bool_()}
    return types.get(kind, pa.string())


class ParquetSink(SeriesSink):
    def __init__(self, directory: Path, what: What, ctx: SinkContext, name: str) -> None:
        self._pa = _pyarrow()
        self.name = name
        self.file = resume_series(
            directory, ctx.prefix, EXT, seal_parquet, max(1, ctx.chunk), ctx.recipients(), ParquetForm()
        )
        self.file.hold = True  # a full file is sealed by commit(), once its batch is completed
        self.rows = RowMaker(what, ctx.crawl_id)
        self.schema = Schema(keys_of(what))
        where = hashlib.sha256(str(directory.resolve()).encode()).hexdigest()[:16]
        self._columns = ctx.out_dir / ".parquet-columns" / f"{where}.json"  # the column types the writers agreed on
        self._shared = ctx.columns
        self._scope = f"parquet:{what}"

    def write(self, batch: Sequence[PageOutput]) -> None:
        self.write_rows(self.rows(batch))

    def write_rows(self, rows: Rows) -> None:
        if not rows.rows:
            return
        pa = self._pa
        need = self.schema.missing(rows.rows)
        if need:
            if self._shared is not None:
                need = _agreed_with(self._shared, self._scope, need)
            else:
                with contextlib.suppress(PermissionError):  # an export from a crawl directory it may not write to
                    need = _agreed(self._columns, need)
            self.schema.add(need)
        names, cells = self.schema.cells(rows.rows)
        fields = [pa.field(n, _arrow_type(self.schema.columns[n])) for n in names]
        columns = [pa.array([row[i] for row in cells], type=f.type) for i, f in enumerate(fields)]
        table = pa.Table.from_arrays(columns, schema=pa.schema(fields))
        out = pa.BufferOutputStream()
        with pa.ipc.new_stream(out, table.schema) as writer:
            writer.write_table(table)
        frame = out.getvalue().to_pybytes()
        self.file.write(_FRAME.pack(len(frame)) + frame, len(cells))


def _digests(need: dict[str, Kind]) -> dict[str, str]:
    """Column names as digests: a field's name can be a page's text, which ``--encrypt-to`` keeps off the disk."""
    return {name: hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:32] for name in need}


def _agreed_with(shared: ColumnTypes, scope: str, need: dict[str, Kind]) -> dict[str, Kind]:
    """The types of the new columns ``need`` as the crawl's writers agreed on them (the first to add one typed it)."""
    keys = _digests(need)
    known = shared.agree(scope, {keys[name]: kind.value for name, kind in need.items()})
    return {name: Kind(known[keys[name]]) for name in need}


def _agreed(path: Path, need: dict[str, Kind]) -> dict[str, Kind]:
    """The types of the new columns ``need`` as the directory's writers agreed on them in ``path`` (the first to add
    a column typed it), recording those that are new to all of them."""
    path.parent.mkdir(parents=True, exist_ok=True)
    keys = _digests(need)
    with path.with_suffix(".lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        known: dict[str, str] = json.loads(path.read_text()) if path.exists() else {}
        if not set(keys.values()) <= known.keys():
            known.update({keys[name]: kind.value for name, kind in need.items() if keys[name] not in known})
            replace_whole(path, json.dumps(known).encode())
    return {name: Kind(known[keys[name]]) for name in need}


def _frames(data: bytes) -> tuple[list[Any], int]:
    """The tables of the whole frames in ``data`` and the offset after the last one."""
    pa = _pyarrow()
    tables, at = [], 0
    while at + _FRAME.size <= len(data):
        (size,) = _FRAME.unpack_from(data, at)
        end = at + _FRAME.size + size
        if end > len(data):
            break
        try:
            tables.append(pa.ipc.open_stream(data[at + _FRAME.size : end]).read_all())
        except (pa.ArrowInvalid, OSError):
            break
        at = end
    return tables, at


def _write_parquet(tables: Sequence[Any], where: Any, compression: str = "zstd") -> None:
    """One Parquet file of ``tables`` (their columns merged by name) to a path or an Arrow output stream."""
    pa = _pyarrow()
    table = pa.concat_tables(tables, promote_options="permissive")
    pa.parquet.write_table(table, where, compression=compression, row_group_size=max(table.num_rows, 1))


class ParquetForm:
    """An encrypted Parquet file's appends (frames) as Parquet files, built in memory."""

    def part(self, data: bytes) -> bytes:
        """Uncompressed: zstd would double the CPU of each write, for a file a kill leaves at most."""
        return self._parquet(data, "none")

    def whole(self, data: bytes) -> bytes:
        return self._parquet(data, "zstd")

    @staticmethod
    def _parquet(data: bytes, compression: str) -> bytes:
        tables, _ = _frames(data)  # whole frames only: every append is one
        out = _pyarrow().BufferOutputStream()
        _write_parquet(tables, out, compression)
        return bytes(out.getvalue().to_pybytes())


def seal_parquet(path: Path) -> None:
    """Convert an ``.open`` frame file into ``<name>.parquet`` atomically (temp name, fsync, rename), then drop it."""
    final = path.with_name(path.name[: -len(OPEN_SUFFIX)])
    if final.exists():  # killed after the rename, before the unlink
        path.unlink()
        return
    tables, keep = _frames(path.read_bytes())
    if not tables:
        path.unlink()
        return
    cut(path, keep)
    tmp = path.with_name(final.name + ".tmp")
    _write_parquet(tables, str(tmp))
    fd = os.open(tmp, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(tmp, final)
    fsync_dir(path.parent)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def seal_parquet_dir(directory: Path, prefix: str = "") -> int:
    for tmp in directory.glob(f"{prefix}*.parquet.tmp") if directory.is_dir() else ():
        tmp.unlink()  # a conversion a kill interrupted; its .open file is still there
    return seal_sink_dir(directory, EXT, seal_parquet, prefix)


def open_parquet(spec: SinkUrl, stream: str, ctx: SinkContext) -> Sink:
    return ParquetSink(ctx.out_dir / spec.target, What(stream), ctx, spec.name)
