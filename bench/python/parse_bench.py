"""The `parse` scenario's driver (toolbridge-bench parse): the corpus through the Python regex
reference (parse_reference.py, in this process) and through a running gateway's POST /v1/parse
(http.client, one kept-alive connection: one turn per request, then --turns-per-request turns per
request with `turns: [...]`), in the same run. Accuracy is
"calls extracted exactly as expected" per turn; time is per turn: wall, this process's CPU and
(from /proc) the gateway's CPU.

    python parse_bench.py URL GATEWAY_PID CORPUS TOOLS [--repeat N] [--turns-per-request N]
    # prints one JSON object
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from parse_reference import Parser  # noqa: E402


def proc_cpu_us(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK") * 1e6


def exact(case: dict, calls: list, unparsed: int | None) -> bool:
    want = [(w["name"], w["arguments"]) for w in case["calls"]]
    return calls == want and (unparsed is None or unparsed == case["unparsed"])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("pid", type=int)
    ap.add_argument("corpus")
    ap.add_argument("tools")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--turns-per-request", type=int, default=64)
    o = ap.parse_args()
    cases = [json.loads(line) for line in open(o.corpus, encoding="utf-8") if line.strip()]
    tools = json.load(open(o.tools, encoding="utf-8"))
    n = len(cases) * o.repeat

    parser = Parser(tools)
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(o.repeat):
        ref = [parser.parse(c["format"], c["text"]) for c in cases]
    ref_wall, ref_cpu = time.perf_counter() - wall, time.process_time() - cpu
    ref_exact = sum(exact(c, got, None) for c, got in zip(cases, ref))

    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(o.repeat):
        built = [Parser(tools).parse(c["format"], c["text"]) for c in cases]
    per_turn_wall, per_turn_cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert built == ref

    u = urllib.parse.urlsplit(o.url)
    conn = http.client.HTTPConnection(u.hostname, u.port)
    bodies = [json.dumps({"text": c["text"], "format": c["format"]}).encode() for c in cases]
    headers = {"Content-Type": "application/json"}
    answers = []
    gw_cpu = proc_cpu_us(o.pid)
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(o.repeat):
        answers = []
        for body in bodies:
            conn.request("POST", "/v1/parse", body, headers)
            answers.append(json.loads(conn.getresponse().read()))
    gw_wall, gw_client_cpu = time.perf_counter() - wall, time.process_time() - cpu
    gw_cpu = proc_cpu_us(o.pid) - gw_cpu
    gw_exact = sum(exact(c, [(k["name"], k["arguments"]) for k in a["calls"]], len(a["unparsed"]))
                   for c, a in zip(cases, answers))

    # Many turns per request (one per trajectory of a rollout step): the round trip amortized.
    step = o.turns_per_request
    batch_bodies = [json.dumps({"turns": [{"text": c["text"], "format": c["format"]}
                                          for c in cases[i:i + step]]}).encode()
                    for i in range(0, len(cases), step)]
    batch_cpu = proc_cpu_us(o.pid)
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(o.repeat):
        batched = []
        for body in batch_bodies:
            conn.request("POST", "/v1/parse", body, headers)
            batched += json.loads(conn.getresponse().read())["turns"]
    b_wall, b_client_cpu = time.perf_counter() - wall, time.process_time() - cpu
    b_gw_cpu = proc_cpu_us(o.pid) - batch_cpu
    b_exact = sum(exact(c, [(k["name"], k["arguments"]) for k in a["calls"]], len(a["unparsed"]))
                  for c, a in zip(cases, batched))
    # The least any JSON-over-HTTP client in Python pays per turn: writing the request and
    # reading the answer with the json module, no network and no parsing at all.
    raw_answers = [json.dumps({"turns": batched[i:i + step]}) for i in range(0, len(batched), step)]
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(o.repeat):
        for i in range(0, len(cases), step):
            json.dumps({"turns": [{"text": c["text"], "format": c["format"]}
                                  for c in cases[i:i + step]]}).encode()
        for a in raw_answers:
            json.loads(a)
    codec_wall, codec_cpu = time.perf_counter() - wall, time.process_time() - cpu
    gw_calls_only = sum(exact(c, [(k["name"], k["arguments"]) for k in a["calls"]], None)
                        for c, a in zip(cases, answers))
    by_kind: dict[str, list[int]] = {}
    for c, got, a in zip(cases, ref, answers):
        k = by_kind.setdefault(c["kind"], [0, 0, 0])
        k[0] += exact(c, got, None)
        k[1] += exact(c, [(x["name"], x["arguments"]) for x in a["calls"]], len(a["unparsed"]))
        k[2] += 1
    us = 1e6 / n
    json.dump({"cases": len(cases), "repeat": o.repeat, "by_kind": by_kind,
               "reference": {"exact": ref_exact, "wall_us": ref_wall * us, "cpu_us": ref_cpu * us},
               "reference_built_per_turn": {"wall_us": per_turn_wall * us, "cpu_us": per_turn_cpu * us},
               "endpoint": {"exact": gw_exact, "exact_calls": gw_calls_only, "wall_us": gw_wall * us,
                            "client_cpu_us": gw_client_cpu * us, "gateway_cpu_us": gw_cpu / n},
               "endpoint_turns": {"turns_per_request": step, "exact": b_exact, "wall_us": b_wall * us,
                                  "client_cpu_us": b_client_cpu * us, "gateway_cpu_us": b_gw_cpu / n},
               "client_json_only": {"wall_us": codec_wall * us, "cpu_us": codec_cpu * us}},
              sys.stdout)
    print()


if __name__ == "__main__":
    main()
