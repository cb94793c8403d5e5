#!/usr/bin/python3
"""Reads Rollcount's counts from Redis as a dashboard would, with redis-py (Debian: python3-redis).

    /usr/bin/python3 examples/python/read_counts.py --redis redis://127.0.0.1:6379 --prefix rc post:1:likes

Prints one JSON object: the counter's total, its last hour of 1m windows before the job's watermark, its
unique users of the watermark's day, and the namespace's latest 1h window top-K list. See the README,
"Reading the counts".
"""
import argparse
import json
import time

import redis


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--redis", default="redis://127.0.0.1:6379")
    p.add_argument("--prefix", default="rc")
    p.add_argument("counter")
    a = p.parse_args()
    r = redis.Redis.from_url(a.redis, decode_responses=True)
    c, P = a.counter, a.prefix

    # the job's watermark (epoch ms); after a bounded run it is the largest long: every window final
    wm = r.get(f"{P}:meta:watermark")
    end = int(time.time() * 1000) if wm is None or int(wm) == 2**63 - 1 else int(wm)

    # the last hour of 1m windows: one MGET, every key of one counter is in one Redis Cluster slot ({C})
    last = end // 60_000 * 60  # the 1m window holding the watermark, in epoch seconds (keys name seconds)
    starts = [last - 60 * i for i in range(59, -1, -1)]
    sums = r.mget([f"{P}:{{{c}}}:1m:{s}" for s in starts])
    windows = [{"start": s * 1000, "sum": None if v is None else int(v)} for s, v in zip(starts, sums)]

    # unique users of the watermark's day: PFCOUNT of the day's HyperLogLog (several keys: their union)
    day = end // 86_400_000 * 86_400
    day_key = f"{P}:{{{c}}}:u:1d:{day}"
    uniques_day = r.pfcount(day_key) if r.exists(day_key) else None

    # the namespace's latest 1h window top-K: the newest top key at or before the watermark's hour
    ns = c.split(":", 1)[0]
    hour = end // 3_600_000 * 3_600
    top = []
    for h in range(hour, hour - 5 * 3_600, -3_600):
        items = r.zrevrange(f"{P}:top:{ns}:1h:{h}", 0, 9, withscores=True)
        if items:
            top = [{"counter": m, "score": s} for m, s in items]
            break

    total = r.get(f"{P}:{{{c}}}:total")
    print(json.dumps({
        "counter": c,
        "total": None if total is None else int(total),
        "windows": windows,
        "uniques_day": uniques_day,
        "top": top,
    }))


if __name__ == "__main__":
    main()
