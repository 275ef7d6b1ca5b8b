"""`cohort runs export --format parquet` with the real binary (its own Parquet writer, no
pyarrow on the writing side) against a real server holding a run written by the real SDK, read
back with pyarrow: every value bit for bit (NaN, the infinities, -0.0, a denormal), nulls where a
key was not logged, two writers, several row groups, zstd and uncompressed pages."""
import csv
import math
import struct
import subprocess

import pytest

import rb_data
from rb_data import rb_client, rb_server  # noqa: F401 (fixtures)
from conftest import COHORT_BIN
from test_read_cli import cli_env, cohort, run_in_pty

pq = pytest.importorskip("pyarrow.parquet")

RUN = "specials1"
RANKS = 2
STEPS = 40
# A NaN with a payload and a negative one: kept only by the columnar history read (the JSON
# answer writes every NaN as "NaN"), so these also check that the export reads columns.
PAYLOAD_NANS = [struct.unpack("<d", struct.pack("<Q", b))[0]
                for b in (0x7ff8000000000abc, 0xfff8000000000001)]
SPECIALS = [float("nan"), float("inf"), float("-inf"), -0.0, 5e-324, 1.0 / 3] + PAYLOAD_NANS

WRITE = f'''
import os, cohort
r = int(os.environ["RB_RANK"])
import struct
SPECIALS = [float("nan"), float("inf"), float("-inf"), -0.0, 5e-324, 1.0 / 3] + [
    struct.unpack("<d", struct.pack("<Q", b))[0] for b in (0x7ff8000000000abc, 0xfff8000000000001)]
run = cohort.init(project="{rb_data.PROJECT}", id=os.environ["RB_RUN"], job_type="ddp",
                  settings=cohort.Settings(mode="shared", x_label=f"rank_{{r}}",
                                           x_primary=r == 0, x_update_finish_state=r == 0,
                                           x_stats_sampling_interval=0))
for s in range({STEPS}):
    row = {{"x": SPECIALS[(s + r) % len(SPECIALS)]}}
    if s % 3 == 0:
        row["y"] = r * 1000 + s + 0.25
    if r == 1:
        row["only1"] = -s
    run.log(row)
run.finish()
'''


def bits(v):
    return struct.unpack("<Q", struct.pack("<d", v))[0]


def expected(rank, step):
    """The values logged by `rank` at `step`: key -> float (absent keys left out)."""
    row = {"x": SPECIALS[(step + rank) % len(SPECIALS)]}
    if step % 3 == 0:
        row["y"] = rank * 1000 + step + 0.25
    if rank == 1:
        row["only1"] = float(-step)
    return row


@pytest.fixture(scope="module")
def specials(rb_client):
    rb_data.run_ranks(rb_client, WRITE, RUN, RANKS)
    total = RANKS * STEPS + sum(1 for _ in range(0, STEPS, 3)) * RANKS + STEPS
    rb_data.wait_points(rb_client, RUN, total)
    return total


def export(server, tmp_path, name, *extra):
    path = tmp_path / name
    out = cohort(server, "runs", "export", f"{rb_data.PROJECT}/{RUN}", "-o", str(path), *extra)
    assert out.returncode == 0, out.stderr
    assert not (tmp_path / (name + ".part")).exists()
    return path, out


def read(path):
    """The table, every page's CRC-32 checked."""
    return pq.ParquetFile(path, page_checksum_verification=True).read()


def check_table(table, csv_rows):
    assert table.column_names == ["writer", "step", "time", "only1", "x", "y"]
    assert str(table.schema.field("time").type) == "timestamp[ms, tz=UTC]"
    assert str(table.schema.field("writer").type) == "string"
    assert str(table.schema.field("step").type) == "int64"
    assert not table.schema.field("step").nullable
    assert table.schema.field("x").nullable and str(table.schema.field("x").type) == "double"
    assert table.num_rows == RANKS * STEPS
    cols = {name: table.column(name).to_pylist() for name in ("writer", "step")}
    times = table.column("time").cast("int64").to_pylist()
    want_rows = [(f"rank_{r}", s) for r in range(RANKS) for s in range(STEPS)]
    assert list(zip(cols["writer"], cols["step"])) == want_rows
    # Steps and times as the csv export has them.
    assert [(r["writer"], int(r["step"]), int(r["time"])) for r in csv_rows] == [
        (w, s, t) for (w, s), t in zip(want_rows, times)]
    for key in ("x", "y", "only1"):
        col = table.column(key)
        nulls = col.is_null().to_pylist()
        values = col.to_pylist()
        for i, (rank_label, step) in enumerate(want_rows):
            want = expected(int(rank_label[-1]), step).get(key)
            if want is None:
                assert nulls[i], (key, rank_label, step, values[i])
            else:
                assert not nulls[i], (key, rank_label, step)
                assert bits(values[i]) == bits(want), (key, rank_label, step, values[i], want)


def test_parquet_export_keeps_every_value_and_null(rb_server, specials, tmp_path):
    csv_path, _ = export(rb_server, tmp_path, "s.csv", "--format", "csv")
    with open(csv_path, newline="") as f:
        csv_rows = list(csv.DictReader(f))
    path, out = export(rb_server, tmp_path, "s.parquet", "--format", "parquet")
    assert f"exported {RANKS * STEPS} rows ({specials} points" in out.stderr
    assert path.read_bytes()[:4] == b"PAR1" and path.read_bytes()[-4:] == b"PAR1"
    meta = pq.ParquetFile(path).metadata
    assert meta.num_row_groups == 1
    assert meta.row_group(0).column(4).compression == "ZSTD"
    assert meta.metadata[b"cohort.run"].endswith(f"/{rb_data.PROJECT}/{RUN}".encode())
    assert meta.created_by.startswith("cohort version ")
    check_table(read(path), csv_rows)
    # A special value really is there: NaN at rank_0 step 0, -0.0 at rank_0 step 3.
    x = read(path).column("x").to_pylist()
    assert math.isnan(x[0]) and math.copysign(1, x[3]) == -1 and x[3] == 0

    # Small row groups, uncompressed pages: the same table.
    path2, _ = export(rb_server, tmp_path, "s2.parquet", "-f", "parquet", "--row-group-rows", "7",
                      "--compression", "none")
    meta2 = pq.ParquetFile(path2).metadata
    assert meta2.num_row_groups == (RANKS * STEPS + 6) // 7
    assert meta2.row_group(0).column(4).compression == "UNCOMPRESSED"
    check_table(read(path2), csv_rows)
    # A flipped bit in a page (the last value of the first page of `x`) fails its checksum.
    data = bytearray(path2.read_bytes())
    col = meta2.row_group(0).column(4)
    data[col.data_page_offset + col.total_compressed_size - 1] ^= 1
    path2.write_bytes(bytes(data))
    with pytest.raises(OSError, match="CRC"):
        read(path2)


def test_parquet_export_of_some_keys_and_one_writer(rb_server, specials, tmp_path):
    path, _ = export(rb_server, tmp_path, "k.parquet", "-f", "parquet", "--keys", "y",
                     "--writers", "rank_1")
    t = read(path)
    assert t.column_names == ["writer", "step", "time", "y"]
    # Rows only where y was logged.
    assert t.column("step").to_pylist() == list(range(0, STEPS, 3))
    assert t.column("y").to_pylist() == [1000 + s + 0.25 for s in range(0, STEPS, 3)]
    assert set(t.column("writer").to_pylist()) == {"rank_1"}


def test_parquet_export_of_no_series_is_an_empty_table(rb_server, specials, tmp_path):
    # A key and a writer the run has, but not that writer's key (a key the run does not have at
    # all exits 2: tests/integration/test_cli_export.py).
    path, out = export(rb_server, tmp_path, "e.parquet", "-f", "parquet", "--keys", "only1",
                       "--writers", "rank_0")
    assert "exported 0 rows" in out.stderr
    t = read(path)
    assert t.num_rows == 0 and t.column_names == ["writer", "step", "time"]
    assert pq.ParquetFile(path).metadata.num_row_groups == 0


def test_parquet_export_bad_arguments_write_nothing(rb_server, specials, tmp_path):
    out = cohort(rb_server, "runs", "export", f"{rb_data.PROJECT}/{RUN}", "-f", "csv",
                 "--compression", "zstd", "-o", str(tmp_path / "a.csv"))
    assert out.returncode == 2
    assert "--compression and --row-group-rows apply to --format parquet only" in out.stderr
    out = cohort(rb_server, "runs", "export", f"{rb_data.PROJECT}/{RUN}", "-f", "parquet",
                 "--row-group-rows", "0", "-o", str(tmp_path / "b.parquet"))
    assert out.returncode != 0 and "--row-group-rows" in out.stderr
    out = cohort(rb_server, "runs", "export", f"{rb_data.PROJECT}/{RUN}", "-f", "parquet",
                 "--compression", "lz4", "-o", str(tmp_path / "c.parquet"))
    assert out.returncode != 0 and "--compression" in out.stderr
    out = cohort(rb_server, "runs", "export", f"{rb_data.PROJECT}/nosuch", "-f", "parquet",
                 "-o", str(tmp_path / "d.parquet"))
    assert out.returncode == 1 and "nosuch" in out.stderr
    # A full disk: an error naming it, exit 1.
    with open("/dev/full", "wb") as full:
        proc = subprocess.run([str(COHORT_BIN), "runs", "export", f"{rb_data.PROJECT}/{RUN}", "-f",
                               "parquet", "-o", "-"], env=cli_env(rb_server), stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=60)
    assert proc.returncode == 1
    assert "cannot write stdout: No space left on device" in proc.stderr, proc.stderr
    # Binary on a terminal: refused.
    rc, text = run_in_pty(rb_server, ["runs", "export", f"{rb_data.PROJECT}/{RUN}", "-f",
                                      "parquet", "-o", "-"], cli_env(rb_server))
    assert rc == 2 and "parquet is binary" in text, text
    assert list(tmp_path.iterdir()) == []
