"""POST /v1/parse against a real gateway and the fixture server: model output in several formats
parsed and resolved against the catalog (names without their server, qwen3_coder values
converted by the schema), unparsed calls with their reason, execution through the pipeline
(repair, deadlines) with results rendered in the format's convention, streams whose calls start
before the output ends, the Python client's parse()/parse_and_execute()/parse_stream() and the
OpenAI adapter on raw completion text, and precise 4xx for bad requests."""

from __future__ import annotations

import http.client
import json
import time

import httpx
import pytest

from tb_support import fixture_server, metric

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def gw(module_gateway_factory):
    return module_gateway_factory({"fixture": fixture_server(call_timeout="20s")})


def post(gw, path, body, status=200) -> dict:
    resp = httpx.post(gw.base_url + path, content=json.dumps(body),
                      headers={"Content-Type": "application/json"}, timeout=60)
    assert resp.status_code == status, resp.text[:500]
    return resp.json()


def parse(gw, text, fmt="auto", **extra) -> dict:
    return post(gw, "/v1/parse", {"text": text, "format": fmt, **extra})


def hermes(name, arguments) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


def test_hermes_calls_are_parsed_and_resolved_in_the_catalog(gw):
    text = ("<think>I need two tools.</think>Let me check.\n" + hermes("echo", {"text": "hi"}) +
            "\n" + hermes("fixture__add", {"a": 2, "b": 3}))
    r = parse(gw, text, "hermes")
    assert r["format"] == "hermes"
    assert r["content"] == "Let me check."
    assert r["reasoning"] == "I need two tools."
    assert [c["name"] for c in r["calls"]] == ["fixture__echo", "fixture__add"]
    assert r["calls"][0]["arguments"] == {"text": "hi"}
    assert r["calls"][0]["written"] == "echo"
    assert r["calls"][0]["repairs"] == [{"kind": "tool_name", "path": "", "from": "echo",
                                         "to": "fixture__echo"}]
    assert len({c["id"] for c in r["calls"]}) == 2
    assert r["unparsed"] == [] and "messages" not in r


def test_qwen3_coder_values_are_converted_by_the_tool_schema(gw):
    text = ("<tool_call>\n<function=fixture__search>\n<parameter=query>\nweather\n</parameter>\n"
            "<parameter=limit>\n5\n</parameter>\n<parameter=exact>\ntrue\n</parameter>\n"
            "<parameter=tags>\n[\"a\", \"b\"]\n</parameter>\n</function>\n</tool_call>")
    r = parse(gw, text, "qwen3_coder")
    assert r["calls"][0]["arguments"] == {"query": "weather", "limit": 5, "exact": True,
                                          "tags": ["a", "b"]}


def test_unparsed_calls_fences_and_mentions(gw):
    text = ("The <tool_call> tag is how I call tools. Example:\n```\n" + hermes("fixture__echo", {"text": "no"})
            + "\n```\n" + hermes("fixture__echo", {"text": "yes"}) +
            "\n<tool_call>{\"name\": \"fixture__echo\", \"arguments\": {\"text\": \"cut")
    r = parse(gw, text, "auto")
    assert [c["arguments"] for c in r["calls"]] == [{"text": "yes"}]
    assert len(r["unparsed"]) == 1 and "cut off" in r["unparsed"][0]["reason"]
    assert r["unparsed"][0]["text"].startswith("<tool_call>")
    assert "```" in r["content"] and "The <tool_call> tag" in r["content"]


def test_use_mcp_tool_and_unknown_names(gw):
    text = ("<use_mcp_tool>\n<server_name>fixture</server_name>\n<tool_name>add</tool_name>\n"
            "<arguments>\n{\"a\": 1, \"b\": 2, \"c\": null}\n</arguments>\n</use_mcp_tool>\n"
            "<use_mcp_tool><server_name>nowhere</server_name><tool_name>zzz_qqq</tool_name>"
            "<arguments>{}</arguments></use_mcp_tool>")
    r = parse(gw, text, "use_mcp_tool", execute=True)
    first, second = r["calls"]
    assert first["name"] == "fixture__add" and first["arguments"] == {"a": 1, "b": 2}
    assert first["repairs"] == [{"kind": "null_dropped", "path": "/c", "from": "null", "to": ""}]
    assert first["outcome"] == "ok" and first["result"]["content"][0]["text"] == "3"
    assert "Unknown tool" in second["problem"]
    assert second["outcome"] == "invalid_params" and "zzz_qqq" in second["error"]["message"]


def test_execute_runs_the_calls_through_the_pipeline_and_renders_them(gw):
    text = (hermes("fixture__sleep", {"ms": 1000}) + hermes("fixture__sleep", {"ms": 1000}) +
            hermes("fixture__search", {"query": "x", "limit": "7"}) +
            hermes("fixture__fail", {"message": "on purpose"}))
    started = time.monotonic()
    r = parse(gw, text, "hermes", execute=True, render=True)
    elapsed = time.monotonic() - started
    # One concurrent batch: about 1 s, not the 2 s of the sleeps one after the other.
    assert elapsed < 1.7, f"{elapsed:.2f} s: the calls did not run as one concurrent batch"
    outcomes = [c["outcome"] for c in r["calls"]]
    assert outcomes == ["ok", "ok", "ok", "tool_error"], r
    # The pipeline's repair stage coerced "7" for the integer parameter, as for any call.
    assert json.loads(r["calls"][2]["result"]["content"][0]["text"]) == {"query": "x", "limit": 7}
    assert r["calls"][0]["timing"]["execution_ms"] >= 990
    ids = [c["id"] for c in r["calls"]]
    assert [m["tool_call_id"] for m in r["messages"]] == ids
    assert r["messages"][0] == {"role": "tool", "tool_call_id": ids[0], "name": "fixture__sleep",
                                "content": "slept 1000 ms"}
    assert r["rendered"].split("\n</tool_response>\n")[0] == "<tool_response>\nslept 1000 ms"
    assert r["rendered"].endswith("<tool_response>\non purpose\n</tool_response>")


def test_execute_honours_timeout_and_renders_other_formats(gw):
    r = parse(gw, "[TOOL_CALLS]fixture__sleep{\"ms\": 2000}", "mistral", execute=True,
              render=True, timeout_ms=100)
    assert r["calls"][0]["outcome"] == "timeout"
    assert r["rendered"].startswith("[TOOL_RESULTS]{\"content\": ")
    d = parse(gw, "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>fixture__echo\n"
                  "```json\n{\"text\": \"deep\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
              "deepseek_v3", execute=True, render=True)
    assert d["rendered"] == ("<｜tool▁outputs▁begin｜><｜tool▁output▁begin｜>deep"
                             "<｜tool▁output▁end｜><｜tool▁outputs▁end｜>")


def stream_request(conn, method, path, body=None):
    conn.request(method, path, body=None if body is None else json.dumps(body),
                 headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    return resp.status, json.loads(resp.read())


def test_stream_reports_and_starts_each_call_before_the_output_ends(gw):
    conn = http.client.HTTPConnection("127.0.0.1", gw.port, timeout=30)
    status, opened = stream_request(conn, "POST", "/v1/parse/streams",
                                    {"format": "hermes", "execute": True})
    assert status == 201 and opened["calls"] == []
    sid = opened["stream"]
    first = hermes("fixture__sleep", {"ms": 1500})
    second = hermes("fixture__echo", {"text": "two"})
    status, a = stream_request(conn, "POST", f"/v1/parse/streams/{sid}",
                               {"text": "Working.\n" + first + second[:20]})
    assert status == 200 and [c["name"] for c in a["calls"]] == ["fixture__sleep"]
    time.sleep(1.6)  # the model keeps generating; the call runs meanwhile
    status, b = stream_request(conn, "POST", f"/v1/parse/streams/{sid}", {"text": second[20:]})
    assert [c["arguments"] for c in b["calls"]] == [{"text": "two"}]
    started = time.monotonic()
    status, done = stream_request(conn, "POST", f"/v1/parse/streams/{sid}", {"text": "", "done": True})
    waited = time.monotonic() - started
    assert status == 200 and [c["outcome"] for c in done["calls"]] == ["ok", "ok"]
    # Started only at the end, the first call would hold the answer for its whole 1.5 s.
    assert waited < 1.0, f"{waited:.2f} s: the first call did not start before the output ended"
    assert done["content"] == "Working." and done["messages"][1]["content"] == "two"
    status, gone = stream_request(conn, "POST", f"/v1/parse/streams/{sid}", {"text": "x"})
    assert status == 404 and gone["error"]["code"] == "no_stream"


def test_stream_in_small_chunks_matches_the_one_shot_parse(gw):
    text = ("<think>plan</think>" + hermes("fixture__echo", {"text": "a"}) + " mid `<tool_call>` " +
            "[TOOL_CALLS]fixture__add{\"a\": 1, \"b\": 1}" +
            "<tool_call><function=fixture__echo><parameter=text>b</parameter></function></tool_call>")
    whole = parse(gw, text, "auto")
    conn = http.client.HTTPConnection("127.0.0.1", gw.port, timeout=30)
    _, opened = stream_request(conn, "POST", "/v1/parse/streams", {"format": "auto"})
    sid, seen = opened["stream"], []
    for i in range(0, len(text), 7):
        status, part = stream_request(conn, "POST", f"/v1/parse/streams/{sid}", {"text": text[i:i + 7]})
        assert status == 200
        seen += part["calls"]
    _, done = stream_request(conn, "POST", f"/v1/parse/streams/{sid}", {"done": True})
    strip = lambda calls: [(c["name"], c["arguments"]) for c in calls]  # noqa: E731
    assert strip(seen) == strip(whole["calls"]) == strip(done["calls"])
    assert len(seen) == 3
    assert done["content"] == whole["content"] and done["reasoning"] == whole["reasoning"] == "plan"


def test_bad_requests_get_precise_errors_and_the_gateway_keeps_serving(gw):
    for body, code, words in [
        ({"text": "x", "format": "gpt"}, 400, "format must be one of hermes"),
        ({"format": "hermes"}, 400, "text is missing"),
        ({"text": "x", "execute": "yes"}, 400, "execute must be true or false"),
        ({"text": "x", "colour": 1}, 400, "unknown key 'colour'"),
        ([1, 2], 400, "the body must be an object"),
    ]:
        err = post(gw, "/v1/parse", body, code)["error"]
        assert words in err["message"], err
    resp = httpx.post(gw.base_url + "/v1/parse", content=b"{not json",
                      headers={"Content-Type": "application/json"})
    assert resp.status_code == 400 and resp.json()["error"]["code"] == "invalid_body"
    resp = httpx.post(gw.base_url + "/v1/parse", content=b"x", headers={"Content-Type": "text/plain"})
    assert resp.status_code == 415
    err = post(gw, "/v1/parse/streams/ps-999999", {"text": "x"}, 404)["error"]
    assert "no parse stream 'ps-999999'" in err["message"]
    # At most 256 streams open at once; a dropped one makes room.
    with httpx.Client(base_url=gw.base_url) as client:
        opened = []
        for _ in range(256):
            resp = client.post("/v1/parse/streams", json={"format": "hermes"})
            assert resp.status_code == 201, resp.text
            opened.append(resp.json()["stream"])
        resp = client.post("/v1/parse/streams", json={"format": "hermes"})
        assert resp.status_code == 503 and "256 parse streams are open" in resp.json()["error"]["message"]
        assert resp.headers["retry-after"] == "1"
        for sid in opened:
            assert client.delete(f"/v1/parse/streams/{sid}").json() == {"dropped": sid}
        assert client.post("/v1/parse/streams", json={"format": "hermes"}).status_code == 201
    assert parse(gw, hermes("fixture__echo", {"text": "still"}), execute=True)["messages"][0]["content"] == "still"
    metrics = gw.metrics()
    assert 'toolbridge_parse_calls_total{outcome="parsed"}' in metrics


def test_python_client_parse_execute_and_stream(gw):
    import toolbridge
    from toolbridge.adapters.openai import OpenAITools

    with toolbridge.Client(gw.base_url) as client:
        r = client.parse(hermes("echo", {"text": "py"}), "hermes")
        assert isinstance(r, toolbridge.ParseResult)
        assert r.calls[0].name == "fixture__echo" and r.calls[0].result is None
        done = client.parse_and_execute(hermes("echo", {"text": "py"}) + "<tool_call>{\"x", render=True)
        assert done.calls[0].result.text == "py" and done.messages[0]["content"] == "py"
        assert done.unparsed and "cut off" in done.unparsed[0].reason
        assert done.rendered == "<tool_response>\npy\n</tool_response>"
        with client.parse_stream("hermes", execute=True) as s:
            assert s.feed(hermes("fixture__add", {"a": 1, "b": 1})[:-3]) == []
            assert [c.name for c in s.feed("ll>")] == ["fixture__add"]
            final = s.finish()
        assert final.calls[0].result.text == "2"
        conversation = OpenAITools(client).execute_text(
            "Adding.<tool_call>\n<function=fixture__add>\n<parameter=a>\n4\n</parameter>\n"
            "<parameter=b>\n5\n</parameter>\n</function>\n</tool_call>", "qwen3_coder")
        assistant, tool = conversation
        assert assistant["content"] == "Adding."
        assert assistant["tool_calls"][0]["function"] == {"name": "fixture__add",
                                                          "arguments": json.dumps({"a": 4, "b": 5})}
        assert tool == {"role": "tool", "tool_call_id": assistant["tool_calls"][0]["id"], "content": "9"}



def test_turns_are_parsed_and_run_in_one_request_answered_in_order(gw):
    texts = [hermes("echo", {"text": f"turn {i}"}) for i in range(40)]
    texts[7] = "no call here"
    texts[9] = "<tool_call>{\"name\": \"echo\", \"argu"  # cut off by max_tokens
    one_by_one = [parse(gw, t, "hermes") for t in texts]
    r = post(gw, "/v1/parse", {"format": "hermes", "turns": [{"text": t} for t in texts]})
    assert len(r["turns"]) == 40 and r["timing"]["total_ms"] > 0
    strip = lambda a: ([(c["name"], c["arguments"]) for c in a["calls"]],  # noqa: E731
                       a["content"], len(a["unparsed"]))
    assert [strip(a) for a in r["turns"]] == [strip(a) for a in one_by_one]
    assert r["turns"][7]["calls"] == [] and r["turns"][9]["unparsed"]
    # Executed: each turn its own trajectory, all the calls running at once; a turn's own keys
    # override the request's defaults.
    turns = [{"text": hermes("fixture__sleep", {"ms": 300}), "trajectory": f"step-{i}"}
             for i in range(6)]
    turns.append({"text": "[TOOL_CALLS]fixture__echo{\"text\": \"mistral\"}", "format": "mistral"})
    started = time.monotonic()
    r = post(gw, "/v1/parse", {"format": "hermes", "execute": True, "render": True,
                               "turns": turns})
    elapsed = time.monotonic() - started
    assert elapsed < 1.2, f"{elapsed:.2f} s: the turns' calls did not run at once"
    assert [t["calls"][0]["outcome"] for t in r["turns"]] == ["ok"] * 7, r
    assert [t["format"] for t in r["turns"]] == ["hermes"] * 6 + ["mistral"]
    assert r["turns"][0]["messages"][0]["content"] == "slept 300 ms"
    assert r["turns"][6]["messages"][0]["content"] == "mistral"
    # One turn that cannot run is an error in its place; the others are answered.
    many = "".join(hermes("echo", {"text": "x"}) for _ in range(300))
    r = post(gw, "/v1/parse", {"execute": True, "turns": [{"text": many},
                                                          {"text": hermes("echo", {"text": "ok"})}]})
    assert r["turns"][0]["error"]["code"] == "too_many_calls"
    assert "gateway.batch_max_calls" in r["turns"][0]["error"]["message"]
    assert r["turns"][1]["messages"][0]["content"] == "ok"


def test_turns_requests_that_are_wrong_get_precise_errors(gw):
    for body, code, words in [
        ({"turns": []}, 400, "turns must be a non-empty array"),
        ({"turns": [{"text": "a"}, "b"]}, 400, "turns[1]: a turn must be an object"),
        ({"turns": [{"text": "a"}, {"format": "hermes"}]}, 400, "turns[1]: text is missing"),
        ({"turns": [{"text": "a", "execute": 1}]}, 400, "turns[0]: execute must be true or false"),
        ({"turns": [{"text": "a"}], "text": "b"}, 400, "with turns, text goes in each turn"),
        ({"turns": [{"text": "a", "turns": []}]}, 400, "turns[0]: a turn cannot hold turns"),
        ({"turns": [{"text": "a"}] * 1025}, 413, "a request holds at most 1024 (gateway.parse_max_turns)"),
    ]:
        err = post(gw, "/v1/parse", body, code)["error"]
        assert words in err["message"], err
    err = post(gw, "/v1/parse/streams", {"turns": [{"text": "a"}]}, 400)["error"]
    assert "turns go to POST /v1/parse" in err["message"]


def test_the_tool_index_is_built_once_per_catalog_version_not_per_request(gw):
    for i in range(20):
        parse(gw, hermes("echo", {"text": str(i)}), "hermes")
    post(gw, "/v1/parse", {"turns": [{"text": hermes("add", {"a": 1, "b": 2})}] * 50})
    # The fixture's tool list never changed: one catalog version, one build.
    assert metric(gw, "toolbridge_parse_index_builds") == 1


def test_python_client_parse_turns_sync_and_async(gw):
    import asyncio

    import toolbridge

    turns = [hermes("echo", {"text": "one"}),
             {"text": "[TOOL_CALLS]fixture__echo{\"text\": \"two\"}", "format": "mistral",
              "trajectory": "py-turns-2"},
             "".join(hermes("echo", {"text": "x"}) for _ in range(300))]
    with toolbridge.Client(gw.base_url) as client:
        results = client.parse_turns(turns, "hermes", execute=True)
    assert [r.error is None for r in results] == [True, True, False]
    assert results[0].messages[0]["content"] == "one" and results[0].calls[0].result.text == "one"
    assert results[1].format == "mistral" and results[1].messages[0]["content"] == "two"
    assert results[2].error["code"] == "too_many_calls" and results[2].calls == []

    async def run():
        async with toolbridge.AsyncClient(gw.base_url) as client:
            return await client.parse_turns(turns[:2], "hermes")
    parsed = asyncio.run(run())
    assert [r.calls[0].name for r in parsed] == ["fixture__echo", "fixture__echo"]
    assert parsed[1].calls[0].arguments == {"text": "two"} and parsed[1].calls[0].result is None
