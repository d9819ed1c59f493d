"""Fetch throughput against a local server: pages/s for N threads, with and without a
per-host rate limit.

Host names h0.test .. h{H-1}.test are mapped to 127.0.0.1 by an injected resolver, so the
limiter sees H distinct hosts while nothing leaves the machine. The numbers bound the
fetcher's own overhead (pinned-IP pools, robots cache, limiter, capped streaming); real
crawls are dominated by remote latency and politeness, i.e. by the rate-limited rows.

    .venv/bin/python bench/fetch_bench.py [--pages 600] [--hosts 8] [--size 20000]
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ThreadPoolExecutor

from openmsd_build.text.fetch import FetchConfig, HttpFetcher
from openmsd_build.text.fetch.testing import LocalServer, respond


class LoopbackResolver:
    """Every name resolves to 127.0.0.1 (picklable, module level)."""

    def __call__(self, host: str, port: int) -> list[str]:
        return ["127.0.0.1"]


def run(server: LocalServer, pages: int, hosts: int, threads: int, rate: float | None) -> tuple[float, int]:
    """Fetch `pages` URLs spread round-robin over `hosts`; return (seconds, ok count)."""
    config = FetchConfig(
        per_host_rate=rate,
        per_host_concurrency=4,
        allow_networks=["127.0.0.0/8"],
        resolver=LoopbackResolver(),
        total_timeout=10.0,
    )
    fetcher = HttpFetcher(config)
    urls = [server.url(f"/doc/{i}", host=f"h{i % hosts}.test") for i in range(pages)]
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        ok = sum(1 for r in pool.map(fetcher.fetch, urls) if r.ok)
    elapsed = time.perf_counter() - start
    fetcher.close()
    return elapsed, ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=600)
    parser.add_argument("--hosts", type=int, default=8)
    parser.add_argument("--size", type=int, default=20_000, help="page size in bytes")
    parser.add_argument("--rate", type=float, default=10.0, help="per-host rate for the limited rows")
    args = parser.parse_args()

    body = b"<!doctype html><html><body>" + b"x" * max(0, args.size - 40) + b"</body></html>"
    routes = {"/robots.txt": lambda h, s: respond(h, 404, b"")}
    with LocalServer(routes, default=lambda h, s: respond(h, 200, body)) as server:
        print(f"{args.pages} pages of {len(body):,} B over {args.hosts} hosts (127.0.0.1)")
        print(f"{'threads':>7} {'per-host rate':>14} {'pages':>6} {'ok':>6} {'seconds':>8} {'pages/s':>8} {'bound':>8}")
        for rate in (None, args.rate):
            pages = args.pages if rate is None else min(args.pages, int(args.hosts * args.rate * 2))
            for threads in (1, 4, 16):
                elapsed, ok = run(server, pages, args.hosts, threads, rate)
                bound = "-" if rate is None else f"{args.hosts * rate:.0f}/s"
                label = "none" if rate is None else f"{rate:g}/s"
                print(f"{threads:>7} {label:>14} {pages:>6} {ok:>6} {elapsed:>8.2f} {ok / elapsed:>8.0f} {bound:>8}")


if __name__ == "__main__":
    main()
