"""scan_history over a shared run of 4 writers and 1,000,000 points (written by 4 real SDK
processes through the node agent): every row comes back exactly, and the reader's memory stays
flat: the tracemalloc peak while streaming all of it stays under what merely holding the
1,000,000 values as Python floats would take (24 MB), let alone rows of dicts."""
import tracemalloc

import rb_data  # first: puts the SDK on sys.path
from rb_data import rb_client, rb_server  # noqa: F401 (fixtures)

import cohort  # noqa: E402
from rb_data import PROJECT

WRITERS = 4
KEYS = 10
STEPS = 25_000  # per writer: 4 * 25,000 * 10 = 1,000,000 points

WRITER = f'''
import os, cohort
r = int(os.environ["RB_RANK"])
run = cohort.init(project="{PROJECT}", id=os.environ["RB_RUN"], group="big",
                  settings=cohort.Settings(mode="shared", x_label=f"rank_{{r}}",
                                           x_primary=r == 0, x_update_finish_state=r == 0,
                                           x_stats_sampling_interval=0, console="off"))
names = [f"k{{i}}" for i in range({KEYS})]
log = run.log
for s in range({STEPS}):
    log({{n: r * 1e6 + s * 16 + i for i, n in enumerate(names)}})
run.finish()
'''

FLOAT_BYTES = 24  # sys.getsizeof(1.0)
BOUND = 16 * 1024 * 1024


def test_scan_history_of_one_million_points_keeps_memory_flat(rb_server, rb_client):
    rb_data.run_ranks(rb_client, WRITER, "big1", WRITERS)
    rb_data.wait_points(rb_client, "big1", WRITERS * KEYS * STEPS, timeout=180)

    api = cohort.Api(base_url=rb_server.url, api_key=rb_server.config["api_key"])
    run = api.run(f"{PROJECT}/big1")
    assert run.writer_count == WRITERS
    rows = 0
    points = 0
    expect_writer, expect_step = 0, 0
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        for row in run.scan_history():
            r = int(row["writer"].split("_")[1])
            if (r, row["step"]) != (expect_writer, expect_step):
                raise AssertionError(f"row {rows}: got {(r, row['step'])}, "
                                     f"expected {(expect_writer, expect_step)}")
            base = r * 1e6 + row["step"] * 16
            for i in range(KEYS):
                if row[f"k{i}"] != base + i:
                    raise AssertionError(f"row {rows}: k{i} = {row[f'k{i}']}, expected "
                                         f"{base + i}")
            points += len(row) - 3
            rows += 1
            expect_step += 1
            if expect_step == STEPS:
                expect_writer, expect_step = expect_writer + 1, 0
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        api.close()
    assert rows == WRITERS * STEPS and points == WRITERS * STEPS * KEYS
    # Holding every value alone would need WRITERS*STEPS*KEYS*24 B = 24 MB.
    assert BOUND < points * FLOAT_BYTES
    assert peak < BOUND, f"scan_history peak {peak / 2**20:.1f} MiB: it does not stream"
