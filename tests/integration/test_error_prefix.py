"""error_prefix: the gateway's own isError results (deadline, crash, not running) start with the
server's marker, for frameworks that show isError results as answers; the server's own tool
errors are passed on unchanged."""

from __future__ import annotations

import pytest

from tb_support import RawSession, fixture_server, text_of

pytestmark = pytest.mark.timeout(90)

PREFIX = "[toolbridge error] "


def test_error_prefix_marks_only_the_gateways_own_errors(gateway_factory):
    gw = gateway_factory({"marked": fixture_server(call_timeout="1s", error_prefix=PREFIX),
                          "plain": fixture_server(call_timeout="1s"),
                          "ghost": {"command": "/nonexistent/toolbridge-no-such-binary",
                                    "error_prefix": PREFIX}},
                         ready=["marked", "plain"])
    sess = RawSession(gw.mcp_url).initialize()
    try:
        timeout = sess.call_tool("marked__sleep", {"ms": 3000}, 1)["result"]
        assert timeout["isError"] and text_of(timeout).startswith(PREFIX + "marked__sleep timed out"), timeout
        plain = sess.call_tool("plain__sleep", {"ms": 3000}, 2)["result"]
        assert plain["isError"] and text_of(plain).startswith("plain__sleep timed out"), plain
        # The server's own error result is its own business.
        own = sess.call_tool("marked__fail", {"message": "bad input"}, 3)["result"]
        assert own["isError"] and not text_of(own).startswith(PREFIX), own
        crashed = sess.call_tool("marked__crash", {}, 4)["result"]
        assert crashed["isError"] and text_of(crashed).startswith(PREFIX), crashed
        ghost = sess.call_tool("ghost__anything", {}, 5)["result"]
        assert ghost["isError"] and text_of(ghost).startswith(PREFIX + "server 'ghost' is unavailable"), ghost
    finally:
        sess.close()
