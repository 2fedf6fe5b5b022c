"""The `toolbridge` client subcommands (tools, call) against a running gateway, and check-config."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess

import pytest

from tb_support import fixture_server, toolbridge_bin, write_config

pytestmark = pytest.mark.timeout(60)


def tb(*args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    """Run the CLI; on timeout kill its whole process group so nothing it started survives."""
    cmd = [str(toolbridge_bin()), *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise AssertionError(f"{' '.join(cmd)} did not finish within {timeout}s\nstdout:\n{out}\nstderr:\n{err}")
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def show(p: subprocess.CompletedProcess) -> str:
    return f"exit {p.returncode}\nstdout:\n{p.stdout[-2000:]}\nstderr:\n{p.stderr[-2000:]}"


@pytest.fixture(scope="module")
def gw(module_gateway_factory):
    return module_gateway_factory({"fixture": fixture_server()}, name="cli")


def test_tools_lists_gateway_tools(gw):
    p = tb("tools", "--url", gw.mcp_url)
    assert p.returncode == 0, show(p)
    for name in ("fixture__echo", "fixture__add", "fixture__payload"):
        assert re.search(rf"(^|\W){name}(\W|$)", p.stdout, re.M), f"{name} not listed\n{show(p)}"


def test_call_with_key_value_arguments(gw):
    p = tb("call", "fixture__add", "a=2", "b=3", "--url", gw.mcp_url)
    assert p.returncode == 0, show(p)
    assert p.stdout.strip() == "5" or re.search(r"(^|[^\d.])5([^\d.]|$)", p.stdout), show(p)


def test_call_with_json_arguments(gw):
    p = tb("call", "fixture__echo", "--json", json.dumps({"text": "json args ✓"}), "--url", gw.mcp_url)
    assert p.returncode == 0, show(p)
    assert "json args ✓" in p.stdout, show(p)

    p = tb("call", "fixture__add", "--json", '{"a": 40, "b": 2}', "--url", gw.mcp_url)
    assert p.returncode == 0, show(p)
    assert re.search(r"(^|[^\d.])42([^\d.]|$)", p.stdout), show(p)


def test_call_error_result_exits_nonzero(gw):
    p = tb("call", "fixture__fail", "message=cli-boom", "--url", gw.mcp_url)
    assert p.returncode != 0, show(p)
    assert "cli-boom" in p.stdout + p.stderr, show(p)


def test_call_unknown_tool_exits_nonzero(gw):
    p = tb("call", "fixture__does_not_exist_zz", "--url", gw.mcp_url)
    assert p.returncode != 0, show(p)
    assert "fixture__does_not_exist_zz" in p.stdout + p.stderr, show(p)


def test_unreachable_gateway_exits_nonzero():
    p = tb("tools", "--url", "http://127.0.0.1:9/mcp", timeout=30)
    assert p.returncode != 0, show(p)
    assert p.stderr.strip(), "no error message on stderr"


def check_config(path) -> subprocess.CompletedProcess:
    return tb("check-config", str(path))


def test_check_config_good(tmp_path, binaries):
    path = write_config(tmp_path, {"fixture": fixture_server(), "other": fixture_server(startup_timeout="5s")},
                        {"tool_naming": "prefixed", "max_body_bytes": "1MiB"})
    p = check_config(path)
    assert p.returncode == 0, show(p)


def test_check_config_good_json(tmp_path, binaries):
    path = write_config(tmp_path, {"fixture": fixture_server()}, fmt="json")
    p = check_config(path)
    assert p.returncode == 0, show(p)


@pytest.mark.parametrize("text,line", [
    # A bad duration on line 5.
    ("gateway:\n  tool_naming: prefixed\nservers:\n  fixture:\n    startup_timeout: banana\n"
     "    command: /bin/true\n", 5),
    # An unknown tool_naming value on line 2.
    ("gateway:\n  tool_naming: sometimes\nservers:\n  fixture:\n    command: /bin/true\n", 2),
    # A server without a command on line 4.
    ("servers:\n  a:\n    command: /bin/true\n  b:\n    args: [x]\n", 4),
    # Broken YAML syntax (unclosed flow sequence) starting on line 3.
    ("servers:\n  a:\n    args: [x, y\n    command: /bin/true\n", 3),
])
def test_check_config_bad_names_file_and_line(tmp_path, binaries, text, line):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    p = check_config(path)
    assert p.returncode != 0, show(p)
    out = p.stdout + p.stderr
    found = re.findall(r"bad\.yaml:(\d+)", out)
    assert found, f"message does not name file:line\n{show(p)}"
    # The unclosed-bracket case may be reported where the parser notices it (a line or two later).
    allowed = {line} if "[x, y" not in text else {line, line + 1, line + 2}
    assert int(found[0]) in allowed, f"expected bad.yaml:{line}\n{show(p)}"


def test_check_config_bad_json(tmp_path, binaries):
    path = tmp_path / "bad.json"
    # A server without a command on line 3.
    path.write_text('{\n  "mcpServers": {\n    "a": {"args": ["x"]}\n  }\n}\n')
    p = check_config(path)
    assert p.returncode != 0, show(p)
    found = re.findall(r"bad\.json:(\d+)", p.stdout + p.stderr)
    assert found and int(found[0]) == 3, show(p)


@pytest.mark.parametrize("listen", ["nonsense", "127.0.0.1:70000", "127.0.0.1:", "host:12ab"])
def test_serve_refuses_a_listen_address_it_cannot_read(binaries, listen):
    p = tb("serve", "--listen", listen)
    assert p.returncode == 2, show(p)
    assert p.stderr.strip() == f"toolbridge: --listen expects HOST:PORT, got '{listen}'", show(p)


def test_check_config_missing_file(tmp_path, binaries):
    p = check_config(tmp_path / "nope.yaml")
    assert p.returncode != 0, show(p)
    assert "nope.yaml" in p.stdout + p.stderr, show(p)


def test_check_config_reports_a_command_not_on_path_or_not_executable(tmp_path, binaries):
    not_exec = tmp_path / "server.sh"
    not_exec.write_text("#!/bin/sh\n")
    not_exec.chmod(0o644)
    path = write_config(tmp_path, {"ok": fixture_server(),
                                   "missing": {"command": "tb-no-such-server-xyz"},
                                   "plain": {"command": str(not_exec)}})
    p = check_config(path)
    assert p.returncode != 0, show(p)
    err = p.stderr
    assert "servers.missing.command: command 'tb-no-such-server-xyz' not found on PATH" in err, show(p)
    assert f"servers.plain.command: cannot execute '{not_exec}': not an executable file" in err, show(p)
    assert "servers.ok" not in err, show(p)


@pytest.mark.parametrize("text,needle", [
    ("servers:\n  s:\n    command: /bin/true\n    env: {X: \"${env:TB_CLI_TEST_UNSET}\"}\n",
     "servers.s.env.X: environment variable TB_CLI_TEST_UNSET"),
    ("servers:\n  s:\n    command: /bin/true\n    call_timeout: 2562048h\n",
     "servers.s.call_timeout: 2562048h is longer than the limit of 720h"),
    ("a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
     "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
     "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
     "g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]\nh: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]\n"
     "servers: {}\n", "an alias bomb?"),
])
def test_check_config_rejects_unset_env_long_durations_and_alias_bombs(tmp_path, binaries, text, needle):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    env = {k: v for k, v in os.environ.items() if k != "TB_CLI_TEST_UNSET"}
    p = subprocess.run([str(toolbridge_bin()), "check-config", str(path)], capture_output=True, text=True,
                       timeout=60, env=env)
    assert p.returncode == 1, show(p)
    assert needle in p.stderr and "bad.yaml:" in p.stderr, show(p)
