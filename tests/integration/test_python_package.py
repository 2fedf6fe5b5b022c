"""The shipped Python package: start a gateway from Python, call through it, stop it cleanly."""

import urllib.error

import pytest
import toolbridge

from tb_sdk import only_text, run, sdk_session
from tb_support import BUILD_DIR, fixture_bin


@pytest.mark.timeout(60)
def test_gateway_context_manager_serves_and_stops(tmp_path):
    cfg = tmp_path / "servers.yaml"
    cfg.write_text(f"servers:\n  fixture:\n    command: {fixture_bin()}\n")
    gw = toolbridge.Gateway(cfg, binary=str(BUILD_DIR / "toolbridge"))
    with gw:
        assert gw.health()["servers"]["fixture"]["state"] == "ready"
        pid = gw.process.pid

        async def call():
            async with sdk_session(gw.url) as session:
                return only_text(await session.call_tool("fixture__echo", {"text": "from python"}))

        assert run(call) == "from python"
    assert gw.process is None
    with pytest.raises(ProcessLookupError):
        import os
        os.kill(pid, 0)


def test_gateway_reports_a_bad_config(tmp_path):
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("servers:\n  fixture:\n    comand: x\n")
    with pytest.raises(toolbridge.GatewayError, match="comand"):
        toolbridge.Gateway(cfg, binary=str(BUILD_DIR / "toolbridge")).start()


@pytest.mark.timeout(60)
def test_trajectories_through_the_official_sdk_and_release(tmp_path):
    cfg = tmp_path / "servers.yaml"
    cfg.write_text(f"servers:\n  fixture:\n    command: {fixture_bin()}\n    policy: per_session\n")
    with toolbridge.Gateway(cfg, binary=str(BUILD_DIR / "toolbridge")) as gw:

        async def rollout():
            async with sdk_session(gw.url) as session:
                counts = {}
                for traj in ("t-a", "t-b", "t-a", "t-a"):
                    result = await session.call_tool("fixture__counter", {},
                                                     meta=toolbridge.trajectory(traj))
                    counts[traj] = only_text(result)
                return counts

        # One connection, two trajectories, each on its own instance.
        assert run(rollout) == {"t-a": "3", "t-b": "1"}
        assert gw.health()["servers"]["fixture"]["sessions_bound"] == 2
        assert gw.release("t-a") == 1
        assert toolbridge.release(gw.url, "t-b") == 1
        assert toolbridge.release(gw.url, "never-used") == 0
        # A name that is not a trajectory name (here: '/', '%' and a space) is refused, not looked up.
        with pytest.raises(urllib.error.HTTPError) as refused:
            toolbridge.release(gw.url, "never/used %")
        assert refused.value.code == 400
        assert gw.health()["servers"]["fixture"]["sessions_bound"] == 0
    with pytest.raises(ValueError):
        toolbridge.trajectory("")
