#!/usr/bin/env python3
"""How a waist network grows on one machine: `waist up` of a line and a grid of N routers
(distance vector on every router, one IP-in-UDP link per neighbour pair), then the time
until every router holds a route to every other router, and each router's memory.

    python3 services/waist/benches/scale.py [N ...]        (default: 10 30 100)

It builds the release binaries (`cargo build --release -p waist -p waist-router`), writes
each topology to a scratch directory, starts it with `waist up --detach`, polls every
router's JSON view (`/api/status` on its metrics port) until each lists N-1 routes learned
by distance vector (one per other router's address), reads VmRSS from /proc, and stops it
with `waist down`. Timers: updates every 1 s, triggered updates after 20 ms (the demo's
are shorter still); infinity is raised to 2N where the diameter needs it.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True,
                      text=True, check=True).stdout.strip()
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
WAIST = os.path.join(TARGET, "release", "waist")
LIMIT_S = 300


def topology(shape, n, first_port):
    """The topology file of a `shape` ("line" or "grid") of about n routers."""
    if shape == "line":
        names = [f"r{i}" for i in range(n)]
        links = [(names[i], names[i + 1]) for i in range(n - 1)]
        diameter = n - 1
    else:
        side = max(2, round(n ** 0.5))
        names = [f"r{r}_{c}" for r in range(side) for c in range(side)]
        links = []
        for r in range(side):
            for c in range(side):
                if c + 1 < side:
                    links.append((f"r{r}_{c}", f"r{r}_{c + 1}"))
                if r + 1 < side:
                    links.append((f"r{r}_{c}", f"r{r + 1}_{c}"))
        diameter = 2 * (side - 1)
    infinity = max(16, 2 * (diameter + 1))
    t = [f'name = "{shape}{len(names)}"', "", "[defaults]",
         f"first_port = {first_port}", f"metrics_base = {first_port + 2000}", "",
         "[defaults.router]",
         f"dv = {{ update_ms = 1000, triggered_ms = 20, infinity = {infinity} }}", ""]
    for i, name in enumerate(names):
        t += ["[[router]]", f'name = "{name}"', f'address = "10.{i // 250}.{i % 250}.1"', ""]
    for a, b in links:
        t += ["[[link]]", f'between = ["{a}", "{b}"]', ""]
    return "\n".join(t), len(names), len(links)


def routes_learned(addr):
    try:
        with urllib.request.urlopen(f"http://{addr}/api/status", timeout=2) as r:
            status = json.load(r)
    except OSError:
        return -1
    return sum(1 for route in status.get("routes", []) if route.get("source") == "dv")


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def run(shape, n):
    scratch = tempfile.mkdtemp(prefix=f"waist-scale-{shape}{n}-")
    try:
        text, routers, links = topology(shape, n, 30000)
        path = os.path.join(scratch, "t.toml")
        with open(path, "w") as f:
            f.write(text)
        run_dir = os.path.join(scratch, "run")
        t0 = time.monotonic()
        up = subprocess.run([WAIST, "up", path, "--detach", "--dir", run_dir],
                            capture_output=True, text=True)
        if up.returncode != 0:
            raise SystemExit(f"waist up failed:\n{up.stdout}\n{up.stderr}")
        started = time.monotonic() - t0
        with open(os.path.join(run_dir, "state.json")) as f:
            procs = json.load(f)["processes"]
        pending = {p["name"]: p["metrics"] for p in procs}
        while pending and time.monotonic() - t0 < LIMIT_S:
            pending = {name: addr for name, addr in pending.items()
                       if routes_learned(addr) < routers - 1}
            time.sleep(0.05)
        converged = time.monotonic() - t0
        rss = sorted(rss_kb(p["pid"]) for p in procs)
        subprocess.run([WAIST, "down", "--dir", run_dir], capture_output=True)
        if pending:
            raise SystemExit(f"{shape} {routers}: {len(pending)} routers without every "
                             f"route after {LIMIT_S} s")
        return routers, links, started, converged, rss[len(rss) // 2], rss[-1]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main():
    sizes = [int(a) for a in sys.argv[1:]] or [10, 30, 100]
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "waist", "-p", "waist-router"],
                   cwd=ROOT, check=True)
    print("| shape | routers | links | all started (s) | every route everywhere (s) |"
          " VmRSS per router, median / max (MB) |")
    print("|---|--:|--:|--:|--:|--:|")
    for n in sizes:
        for shape in ("line", "grid"):
            routers, links, started, converged, med, top = run(shape, n)
            print(f"| {shape} | {routers} | {links} | {started:.2f} | {converged:.2f} |"
                  f" {med / 1024:.1f} / {top / 1024:.1f} |", flush=True)


if __name__ == "__main__":
    main()
