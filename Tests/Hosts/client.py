"""One process of the many-hosts test (scripts/many-hosts.sh): on the
PostgreSQL store at URL, as writer WRITER, adds one to the shared counter
COUNT times, each with an entry of its own key (WRITER, n), settling every
conflict by refreshing and trying again; a second context keeps a live query
over every entry, merging as it goes. Prints one JSON line: the conflicts it
met and whether its live query ended equal to a fresh fetch.

    python3 client.py URL setup            makes the store and the counter
    python3 client.py URL WRITER COUNT TOTAL   one writer (TOTAL: every writer's COUNT added up)
    python3 client.py URL check TOTAL      the counter and the entries, checked
"""
import json
import sys
import time

import amber

MODEL = {"entities": [
    {"name": "Counter", "attributes": [{"name": "name", "type": "string", "optional": False},
                                      {"name": "value", "type": "integer64", "optional": False, "default": 0}],
     "uniquenessConstraints": [["name"]]},
    {"name": "Entry", "attributes": [{"name": "writer", "type": "string", "optional": False},
                                    {"name": "seq", "type": "integer64", "optional": False}],
     "uniquenessConstraints": [["writer", "seq"]]},
]}


def main(url: str, role: str, number: int, total: int) -> dict:
    with amber.open(url, amber.Model.from_dict(MODEL, amber.Registry())) as store:
        if role == "setup":
            with store.context() as ctx:
                ctx.insert("Counter", name="shared", value=0)
                ctx.save()
            return {"setup": True}
        if role == "check":
            with store.context() as ctx:
                counter = ctx.fetch("Counter")[0]
                keys = [(entry.writer, entry.seq) for entry in ctx.fetch("Entry")]
                return {"value": counter.value, "entries": len(keys), "distinct": len(set(keys)), "expected": number}
        conflicts = 0
        with store.context() as ctx, store.context() as watcher:
            watcher.automatically_merges_changes = True
            live = watcher.live_query("Entry", sort=["writer", "seq"])
            counter = ctx.fetch("Counter", "name == %@", "shared")[0]
            for seq in range(number):
                ctx.insert("Entry", writer=role, seq=seq)
                while True:
                    counter.value = counter.value + 1
                    try:
                        ctx.save()
                        break
                    except amber.ValidationError as error:
                        if not all(problem.rule == "conflict" for problem in error.problems):
                            raise
                        conflicts += 1
                        ctx.refresh(counter, merge_changes=False)
                if seq % 5 == 0:
                    watcher.merge_saved_changes()
            # Once every writer is done (the counter says so), the live query, merged, must equal a fresh fetch.
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                with store.context() as fresh:
                    if fresh.fetch("Counter")[0].value >= total:
                        break
                watcher.wait_for_saved_changes(1.0)
            watcher.merge_saved_changes()
            with store.context() as fresh:
                expected = [(entry.writer, entry.seq) for entry in fresh.fetch("Entry", sort=["writer", "seq"])]
            seen = [(entry.writer, entry.seq) for entry in live.objects]
            return {"writer": role, "conflicts": conflicts, "live_equal": seen == expected, "seen": len(seen)}


if __name__ == "__main__":
    arguments = sys.argv[1:] + ["0", "0"]
    print(json.dumps(main(arguments[0], arguments[1], int(arguments[2]), int(arguments[3]))))
