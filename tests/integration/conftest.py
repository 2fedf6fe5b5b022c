"""Fixtures for the toolbridge integration tests.

Tests marked `serial` count calls per second or compare latencies, so a neighbouring test on a
2-core machine would skew them: scripts/test runs the others two at a time and those alone.
Every test gets a timeout (pytest-timeout): tests may set their own with @pytest.mark.timeout,
otherwise DEFAULT_TIMEOUT applies. Gateways run on port 0 and are stopped (SIGTERM, then
SIGKILL) and checked for leaked child processes on teardown, also when the test failed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tb_support import Gateway, fixture_bin, start_gateway, toolbridge_bin  # noqa: E402

DEFAULT_TIMEOUT = 120


def pytest_configure(config):
    config.addinivalue_line("markers", "timeout(seconds): per-test timeout (pytest-timeout)")
    config.addinivalue_line(
        "markers", "serial: measures throughput or latency; scripts/test runs it alone, after the rest")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(DEFAULT_TIMEOUT))


@pytest.fixture(scope="session")
def binaries():
    """Fail (not skip) with a clear message when the build is missing."""
    return toolbridge_bin(), fixture_bin()


class GatewayFactory:
    """Starts gateways in a directory and stops/checks all of them at teardown."""

    def __init__(self, base: Path):
        self.base = base
        self.gateways: list[Gateway] = []

    def __call__(self, servers: dict, gateway: dict | None = None, fmt: str = "yaml",
                 ready=None, ready_timeout: float = 60.0, name: str | None = None) -> Gateway:
        workdir = self.base / (name or f"gw{len(self.gateways)}")
        gw = start_gateway(workdir, servers, gateway, fmt, ready, ready_timeout)
        self.gateways.append(gw)
        return gw

    def close_all(self) -> None:
        errors = []
        for gw in self.gateways:
            try:
                gw.close()
            except AssertionError as exc:
                errors.append(str(exc))
        self.gateways.clear()
        if errors:
            pytest.fail("gateway teardown: " + "\n\n".join(errors), pytrace=False)


@pytest.fixture
def gateway_factory(tmp_path, binaries):
    factory = GatewayFactory(tmp_path)
    yield factory
    factory.close_all()


@pytest.fixture(scope="module")
def module_gateway_factory(tmp_path_factory, binaries):
    """Like gateway_factory, for gateways shared by the tests of one module."""
    factory = GatewayFactory(tmp_path_factory.mktemp("gw"))
    yield factory
    factory.close_all()
