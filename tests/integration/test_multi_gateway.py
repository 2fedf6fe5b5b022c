"""Three gateways behind a real nginx (Debian's, with deploy/nginx/toolbridge.conf as written,
only its addresses replaced by loopback ports) and one real redis-server:

- 100 trajectories x 10 calls keep their per_session instance (the fixture's `pid` tool says
  which process served each call), spread over the three gateways by the consistent hash;
- a cached tool's result is shared: stored by one gateway, a hit on the other two;
- a tenant's rate holds across the three gateways together (counted in Redis);
- one gateway SIGKILLed mid-run: the calls in flight on it (a batch and an MCP session's) get
  nginx's 502 as the config's JSON naming the lost gateway, not an HTML page; each of its
  trajectories gets one error naming the lost gateway and server, then continues on a surviving
  gateway with a fresh instance; the trajectories of the other gateways never notice;
- gateways that never answer: nginx's 504 is the config's JSON too.
"""

from __future__ import annotations

import re
import shutil
import signal
import socket
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tb_support import Gateway, RawSession, fixture_server, metric, read_proc, rpc, stop_process
from test_cache import RedisServer

ROOT = Path(__file__).resolve().parents[2]
TRAJECTORIES = 100


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Nginx:
    """Debian's nginx in the foreground (one process), with the documented config included."""

    def __init__(self, workdir: Path, ports: list[int], read_timeout: str = ""):
        binary = shutil.which("nginx") or "/usr/sbin/nginx"
        assert Path(binary).exists(), "nginx is not installed (scripts/setup installs it)"
        workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        conf = (ROOT / "deploy/nginx/toolbridge.conf").read_text()
        for i, port in enumerate(ports, start=1):
            conf = conf.replace(f"10.0.0.1{i}:8848", f"127.0.0.1:{port}")
        assert "10.0.0." not in conf
        conf = conf.replace("listen 80;", f"listen 127.0.0.1:{self.port};")
        if read_timeout:
            assert "proxy_read_timeout 1h;" in conf
            conf = conf.replace("proxy_read_timeout 1h;", f"proxy_read_timeout {read_timeout};")
        (workdir / "toolbridge.conf").write_text(conf)
        (workdir / "nginx.conf").write_text(f"""
master_process off;
daemon off;
pid {workdir}/nginx.pid;
error_log {workdir}/error.log;
events {{}}
http {{
  access_log off;
  client_body_temp_path {workdir}/body;
  proxy_temp_path {workdir}/proxy;
  include {workdir}/toolbridge.conf;
}}
""")
        self.proc = subprocess.Popen([binary, "-p", str(workdir), "-c", str(workdir / "nginx.conf")],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                assert self.proc.poll() is None, (workdir / "error.log").read_text()
                assert time.monotonic() < deadline, "nginx did not start"
                time.sleep(0.05)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class HAProxy:
    """Debian's HAProxy in the foreground with deploy/haproxy/haproxy.cfg as written."""

    def __init__(self, workdir: Path, ports: list[int]):
        binary = shutil.which("haproxy") or "/usr/sbin/haproxy"
        assert Path(binary).exists(), "haproxy is not installed (scripts/setup installs it)"
        workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        cfg = (ROOT / "deploy/haproxy/haproxy.cfg").read_text()
        for i, port in enumerate(ports, start=1):
            cfg = cfg.replace(f"10.0.0.1{i}:8848", f"127.0.0.1:{port}")
        cfg = cfg.replace("bind :80", f"bind 127.0.0.1:{self.port}")
        (workdir / "haproxy.cfg").write_text(cfg)
        self.proc = subprocess.Popen([binary, "-db", "-f", str(workdir / "haproxy.cfg")],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                assert self.proc.poll() is None, "haproxy exited"
                assert time.monotonic() < deadline, "haproxy did not start"
                time.sleep(0.05)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        stop_process(self.proc)


def gateway_config(gateway_id: str, redis: RedisServer) -> dict:
    return {
        "gateway_id": gateway_id,
        "shared_limits": {"redis": redis.address, "timeout": "1s"},
        "cache": {"redis": {"address": redis.address, "timeout": "1s", "key_prefix": "tb-multi:"}},
        "tenants": {"metered": {"rate": 20}},
    }


def servers() -> dict:
    return {
        "sandbox": fixture_server(policy="per_session", spares=2),
        "search": fixture_server(cache={"tools": ["lookup"], "ttl": "10m", "tier": "redis"}),
    }


@pytest.fixture
def cluster(tmp_path, binaries):
    redis = RedisServer(tmp_path / "redis")
    gateways: list[Gateway] = []
    nginx = None
    try:
        for i in (1, 2, 3):
            gw = Gateway(tmp_path / f"gw-{i}", servers(), gateway_config(f"gw-{i}", redis))
            gateways.append(gw.start())
        for gw in gateways:
            gw.wait_ready()
        nginx = Nginx(tmp_path / "nginx", [gw.port for gw in gateways])
        yield redis, gateways, nginx
    finally:
        if nginx:
            nginx.close()
        for gw in gateways:
            gw.close(check=gw.proc is not None and gw.proc.poll() is None)
        redis.close()


def test_haproxy_keeps_trajectories_and_sessions_on_their_gateway(tmp_path, binaries):
    redis = RedisServer(tmp_path / "redis")
    gateways = []
    proxy = None
    try:
        for i in (1, 2, 3):
            gateways.append(Gateway(tmp_path / f"gw-{i}", servers(), gateway_config(f"gw-{i}", redis)).start())
        for gw in gateways:
            gw.wait_ready()
        proxy = HAProxy(tmp_path / "haproxy", [gw.port for gw in gateways])
        names = [f"h-{i}" for i in range(30)]
        with httpx.Client(timeout=60) as client:
            runs = run_calls(client, proxy.url, names, 4)
            homes = {}
            for name, entries in runs.items():
                pids = {pid_of(e) for e in entries}
                assert len(pids) == 1, (name, pids)
                homes[name] = read_proc(pids.pop()).ppid
            assert len(set(homes.values())) == 3  # spread over every gateway
            # An MCP session's requests follow its id to the gateway that opened it.
            from tb_support import RawSession
            for _ in range(6):
                s = RawSession(proxy.url + "/mcp", client=client).initialize()
                owner = s.session_id.split(".")[0]
                pid = int(s.call_tool("sandbox__pid", {})["result"]["content"][0]["text"])
                gw = gateways[int(owner.split("-")[1]) - 1]
                assert read_proc(pid).ppid == gw.proc.pid, (owner, pid)
        # A gateway SIGKILLed with calls in flight: HAProxy's 502 is the config's JSON-RPC error
        # (one body for every path), naming the server; a kept-alive connection is closed instead.
        victim = gateways[2]
        trajectory = next(n for n in names if homes[n] == victim.proc.pid)
        in_flight = calls_in_flight_on(victim, "gw-3", proxy.url, trajectory)
        victim.proc.send_signal(signal.SIGKILL)
        victim.proc.wait(10)
        assert_lost_in_flight(in_flight, "gw-3", -32003, kept_alive_gets_502=False)
    finally:
        if proxy:
            proxy.close()
        for gw in gateways:
            gw.close(check=gw.proc is not None and gw.proc.poll() is None)
        redis.close()


def batch(client: httpx.Client, url: str, tool: str, args: dict, **headers: str) -> httpx.Response:
    return client.post(url + "/v1/batch", json={"calls": [{"tool": tool, "arguments": args}]},
                       headers=headers)


def pid_call(client: httpx.Client, url: str, trajectory: str) -> dict:
    r = batch(client, url, "sandbox__pid", {}, **{"X-Toolbridge-Trajectory": trajectory})
    assert r.status_code == 200, (trajectory, r.status_code, r.text[:300])
    return r.json()["results"][0]


def pid_of(entry: dict) -> int:
    assert entry["outcome"] == "ok", entry
    return int(entry["result"]["content"][0]["text"])


def run_calls(client, url, names, calls: int) -> dict[str, list[dict]]:
    def one(name: str) -> list[dict]:
        return [pid_call(client, url, name) for _ in range(calls)]
    with ThreadPoolExecutor(16) as pool:
        return dict(zip(names, pool.map(one, names)))


def calls_in_flight_on(gw: Gateway, gateway_id: str, url: str, trajectory: str) -> dict:
    """A batch call of `trajectory` and an MCP session's call, both sleeping on `gw` through the
    balancer at `url`."""
    session = None
    for _ in range(60):  # initialize without a trajectory lands anywhere: until one lands on gw
        s = RawSession(url + "/mcp").initialize()
        if s.session_id.startswith(gateway_id + "."):
            session = s
            break
        s.close()
    assert session is not None, f"no MCP session landed on {gateway_id} in 60 tries"
    sleep = {"ms": 30000}

    def batch_call() -> httpx.Response:
        with httpx.Client(timeout=60) as client:
            return batch(client, url, "sandbox__sleep", sleep, **{"X-Toolbridge-Trajectory": trajectory})

    def session_call() -> httpx.Response:
        try:
            return session.post(rpc("tools/call", {"name": "search__sleep", "arguments": sleep}, 9))
        finally:
            session.close()

    pool = ThreadPoolExecutor(2)
    futures = {"batch": pool.submit(batch_call), "mcp": pool.submit(session_call)}
    deadline = time.monotonic() + 20
    while metric(gw, "toolbridge_in_flight") < 2:
        assert time.monotonic() < deadline, "the two calls never reached the gateway"
        time.sleep(0.05)
    pool.shutdown(wait=False)
    return futures


def assert_lost_in_flight(futures: dict, gateway_id: str, batch_code: str | int,
                          kept_alive_gets_502: bool = True) -> None:
    """The balancer's 502 for a gateway lost mid-call is the config's JSON, naming the gateway.
    The batch call comes on a fresh connection, the MCP session's on a kept-alive one."""
    lost = futures["batch"].result(20)
    assert lost.status_code == 502 and lost.headers["content-type"] == "application/json", lost.text
    err = lost.json()["error"]
    assert err["code"] == batch_code, err
    assert err["message"].startswith(f"gateway '{gateway_id}' was lost with this request in flight"), err
    if not kept_alive_gets_502:
        # HAProxy, by design: a server that closes before answering a request on a reused
        # client connection makes it close that connection, so the client may retry.
        with pytest.raises(httpx.RemoteProtocolError):
            futures["mcp"].result(20)
        return
    lost = futures["mcp"].result(20)
    assert lost.status_code == 502 and lost.headers["content-type"] == "application/json", lost.text
    body = lost.json()
    assert body["jsonrpc"] == "2.0" and body["id"] is None and body["error"]["code"] == -32003, body
    assert f"gateway '{gateway_id}' was lost" in body["error"]["message"], body


@pytest.mark.timeout(120)
def test_trajectories_keep_their_instance_and_survive_a_gateway_killed(cluster):
    redis, gateways, nginx = cluster
    names = [f"traj-{i}" for i in range(TRAJECTORIES)]
    gateway_of_pid = {}
    with httpx.Client(timeout=60, limits=httpx.Limits(max_connections=32)) as client:
        first = run_calls(client, nginx.url, names, 5)
        home: dict[str, int] = {}  # trajectory -> gateway pid
        for name, entries in first.items():
            pids = {pid_of(e) for e in entries}
            assert len(pids) == 1, (name, pids)  # one instance for the whole trajectory
            pid = pids.pop()
            proc = read_proc(pid)
            assert proc is not None
            home[name] = proc.ppid
            gateway_of_pid[pid] = proc.ppid
        by_gateway = {gw.proc.pid: [n for n in names if home[n] == gw.proc.pid] for gw in gateways}
        assert all(len(v) >= 10 for v in by_gateway.values()), {k: len(v) for k, v in by_gateway.items()}
        assert len(set(gateway_of_pid)) == TRAJECTORIES  # an instance per trajectory

        victim = gateways[1]
        lost = set(by_gateway[victim.proc.pid])
        in_flight = calls_in_flight_on(victim, "gw-2", nginx.url, sorted(lost)[0])
        victim.proc.send_signal(signal.SIGKILL)
        victim.proc.wait(10)
        assert_lost_in_flight(in_flight, "gw-2", "gateway_lost")

        second = run_calls(client, nginx.url, names, 5)
    for name, entries in second.items():
        if name not in lost:
            # The other gateways' trajectories never notice: same instance, no error.
            assert {pid_of(e) for e in entries} == {pid_of(first[name][0])}, name
            continue
        err = entries[0]
        assert err["outcome"] == "unavailable", (name, err)
        assert re.search(rf"trajectory '{name}' was held by gateway 'gw-2', which is gone .*"
                         r"per_session instance of server 'sandbox'", err["error"]["message"]), err
        fresh = {pid_of(e) for e in entries[1:]}
        assert len(fresh) == 1, (name, fresh)
        survivor = read_proc(fresh.pop())
        assert survivor is not None and survivor.ppid in (gateways[0].proc.pid, gateways[2].proc.pid)


def test_nginx_answers_a_silent_gateway_with_json_naming_it(tmp_path):
    """Gateways that take the connection and never answer (listening sockets nobody accepts
    from), and the config's proxy_read_timeout cut to 1 s: nginx's 504 is the config's JSON."""
    silent = []
    nginx = None
    try:
        for _ in range(3):
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            sock.listen(16)
            silent.append(sock)
        nginx = Nginx(tmp_path / "nginx", [s.getsockname()[1] for s in silent], read_timeout="1s")
        with httpx.Client(timeout=30) as client:
            r = batch(client, nginx.url, "sandbox__pid", {}, **{"X-Toolbridge-Trajectory": "quiet-1"})
            assert r.status_code == 504 and r.headers["content-type"] == "application/json", r.text
            err = r.json()["error"]
            assert err["code"] == "gateway_timeout", err
            assert re.match(r"gateway 'gw-[123]' did not answer within the balancer's proxy_read_timeout", err["message"]), err
            r = client.post(nginx.url + "/mcp", json=rpc("initialize", {}, 1),
                            headers={"Accept": "application/json, text/event-stream"})
            assert r.status_code == 504, r.text
            body = r.json()
            assert body["id"] is None and body["error"]["code"] == -32002, body
            assert re.match(r"gateway 'gw-[123]' did not answer", body["error"]["message"]), body
    finally:
        if nginx:
            nginx.close()
        for sock in silent:
            sock.close()


def test_a_cached_result_is_a_hit_on_every_gateway(cluster):
    redis, gateways, _ = cluster
    with httpx.Client(timeout=30) as client:
        stored = batch(client, gateways[0].base_url, "search__lookup", {"query": "shared"}).json()["results"][0]
        assert stored["outcome"] == "ok" and "toolbridge/cache" not in stored["result"].get("_meta", {})
        redis.wait_for_keys(1)
        for gw in gateways[1:]:
            hit = batch(client, gw.base_url, "search__lookup", {"query": "shared"}).json()["results"][0]
            assert hit["result"]["_meta"]["toolbridge/cache"]["tier"] == "redis", hit
            assert hit["result"]["content"] == stored["result"]["content"]


def test_a_tenant_rate_holds_across_the_three_gateways(cluster):
    _, gateways, _ = cluster
    admitted = shed = 0
    message = ""
    with httpx.Client(timeout=30) as client:
        start = time.monotonic()
        for i in range(20):
            for gw in gateways:  # 60 calls, 20 per gateway, within well under a second
                r = batch(client, gw.base_url, "search__echo", {"text": str(i)},
                          **{"X-Toolbridge-Tenant": "metered"})
                if r.status_code == 200:
                    admitted += 1
                else:
                    assert r.status_code == 429, r.text
                    shed += 1
                    message = r.text
        elapsed = time.monotonic() - start
    # One shared window of 20 calls per second: a per-gateway count would have let all 60 in.
    allowed = 20 * (int(elapsed) + 1)
    assert 20 <= admitted <= allowed, (admitted, shed, elapsed)
    assert shed >= 60 - allowed
    assert "over its rate of 20 calls per second across all gateways (tenants.metered.rate)" in message
    # Another tenant is not held by it.
    with httpx.Client(timeout=30) as client:
        assert batch(client, gateways[0].base_url, "search__echo", {"text": "x"}).status_code == 200


def test_a_stopped_redis_degrades_rates_to_local_windows_in_bounded_time(gateway_factory, tmp_path):
    redis = RedisServer(tmp_path / "redis")
    try:
        gw = gateway_factory(servers(), {**gateway_config("gw-1", redis),
                                         "shared_limits": {"redis": redis.address, "timeout": "200ms"},
                                         "tenants": {"metered": {"rate": 5}}})
        redis.signal(signal.SIGSTOP)  # accepts connections, answers nothing
        admitted = 0
        start = time.monotonic()
        with httpx.Client(timeout=30) as client:
            for i in range(15):
                r = batch(client, gw.base_url, "search__echo", {"text": str(i)},
                          **{"X-Toolbridge-Tenant": "metered"})
                admitted += r.status_code == 200
        elapsed = time.monotonic() - start
        # This gateway's own window decides: the rate still holds, and no call waited long.
        assert 5 <= admitted <= 5 * (int(elapsed) + 1), (admitted, elapsed)
        assert elapsed < 5.0, elapsed
        metrics = gw.metrics()
        fallbacks = [x for x in metrics.splitlines() if x.startswith("toolbridge_rate_local_fallbacks_total")]
        assert fallbacks and float(fallbacks[0].split()[-1]) >= 1, fallbacks
    finally:
        redis.signal(signal.SIGCONT)
        redis.close()


def test_a_restarted_gateway_says_which_trajectories_lost_their_instance(gateway_factory, tmp_path):
    redis = RedisServer(tmp_path / "redis")
    try:
        first = gateway_factory(servers(), gateway_config("gw-1", redis), name="first")
        with httpx.Client(timeout=30) as client:
            before = pid_of(pid_call(client, first.base_url, "kept-7"))
            first.proc.send_signal(signal.SIGKILL)
            first.proc.wait(10)
            again = gateway_factory(servers(), gateway_config("gw-1", redis), name="again")
            lost = pid_call(client, again.base_url, "kept-7")
            assert lost["outcome"] == "unavailable", lost
            assert lost["error"]["message"].startswith(
                "trajectory 'kept-7' was held by this gateway ('gw-1') before it restarted"), lost
            after = {pid_of(pid_call(client, again.base_url, "kept-7")) for _ in range(3)}
            assert len(after) == 1 and before not in after
            # A trajectory the restarted gateway has never seen starts without an error.
            assert pid_of(pid_call(client, again.base_url, "new-8")) > 0
    finally:
        redis.close()


def test_with_redis_stopped_a_moved_trajectory_starts_afresh_without_being_told(gateway_factory, tmp_path):
    """The documented degradation: with Redis not answering, no gateway can read who held a
    trajectory, so one moved off a dead gateway gets a fresh instance and no error."""
    redis = RedisServer(tmp_path / "redis")
    try:
        config = {**gateway_config("gw-1", redis), "shared_limits": {"redis": redis.address, "timeout": "200ms"}}
        first = gateway_factory(servers(), config, name="first")
        second = gateway_factory(servers(), {**config, "gateway_id": "gw-2"}, name="second")
        with httpx.Client(timeout=30) as client:
            before = pid_of(pid_call(client, first.base_url, "moved-3"))
            redis.signal(signal.SIGSTOP)
            first.proc.send_signal(signal.SIGKILL)
            first.proc.wait(10)
            start = time.monotonic()
            moved = pid_call(client, second.base_url, "moved-3")
            assert time.monotonic() - start < 5.0
            assert moved["outcome"] == "ok", moved  # not "unavailable": the loss is not reported
            assert pid_of(moved) != before
    finally:
        redis.signal(signal.SIGCONT)
        redis.close()
