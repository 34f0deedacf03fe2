"""A loop over a million fetched objects, in batches, keeps memory flat: the
objects of a batch nobody holds any more release their handles."""
import os
import time

import amber
from amber import ffi, lib

ROWS = 1_000_000
BATCH = 10_000
# Kept objects cost about 800 bytes each (Python object, its values, the C
# handle): without releasing, this loop grows by some 800 MB. Flat, it moves
# by about 1 MB (allocator pools, SQLite's page cache). 30 MB is far from
# both: it fails if more than about 4% of the objects stayed.
BOUND_MB = 30


def rss_mb():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def test_a_million_fetched_objects_in_batches_keep_memory_flat(tmp_path):
    started = time.perf_counter()
    model = amber.Model.from_dict({"entities": [{"name": "Row", "attributes": [
        {"name": "n", "type": "integer64", "indexed": True}, {"name": "label", "type": "string"}]}]}, amber.Registry())
    with amber.open(tmp_path / "rows.amber", model) as store:
        with store.context() as ctx:
            for start in range(0, ROWS, 50_000):
                ctx.insert_many("Row", ["n", "label"], [(n, f"row {n}") for n in range(start, start + 50_000)])
                ctx.save()
        inserted = time.perf_counter()
        with store.context() as ctx:
            state = ffi.new("uint32_t *")
            total = 0
            for number, start in enumerate(range(0, ROWS, BATCH)):
                batch = ctx.fetch("Row", "n >= %@ AND n < %@", start, start + BATCH)
                total += sum(row.n for row in batch)
                probe = ffi.cast("amber_object *", batch[-1]._handle)
                del batch
                # Nothing of the batch is left: no Python object, no live C handle.
                assert len(ctx._objects) == 0
                assert lib.amber_object_state(state, probe) == lib.AMBER_E_INVALID_HANDLE
                if number == 3:
                    baseline = rss_mb()  # after a few batches: caches and allocator pools are warm
            end = rss_mb()
            fetched = time.perf_counter()
            assert total == ROWS * (ROWS - 1) // 2  # every row read, once
            assert end - baseline < BOUND_MB, f"RSS grew from {baseline:.1f} MB to {end:.1f} MB"

            # The control: keeping objects does show, so flat above means released.
            kept = [ctx.fetch("Row", "n >= %@ AND n < %@", start, start + BATCH) for start in range(0, 100_000, BATCH)]
            grown = rss_mb() - end
            assert grown > BOUND_MB, f"keeping {sum(map(len, kept))} objects grew RSS by only {grown:.1f} MB"
    print(f"\ninsert {inserted - started:.1f} s, fetch {fetched - inserted:.1f} s; RSS {baseline:.1f} MB after "
          f"4 batches, {end:.1f} MB after {ROWS // BATCH}; 100,000 objects kept: +{grown:.1f} MB")
