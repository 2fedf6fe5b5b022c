"""Official Python SDK sessions against a gateway, each with concurrent calls of mixed length: the
client side of test_node_scale.py's rollouts. Run as a program it plays sessions FIRST..FIRST+COUNT
and prints one JSON line ({"answered": N, "errors": [...the first 20...], "failed": N}), so a test
can spread a node's sessions over several client processes (one Python process is one core)."""

from __future__ import annotations

import json
import sys

import anyio

from tb_sdk import only_text, sdk_session


def plan(session: int, i: int) -> tuple[str, dict, str]:
    """(tool, arguments, the text it answers) of call i of a session."""
    kind = (session + i) % 3
    if kind == 0:
        return "fixture__echo", {"text": f"s{session}-c{i}"}, f"s{session}-c{i}"
    ms = 50 if kind == 1 else 1000
    return "fixture__sleep", {"ms": ms}, f"slept {ms} ms"


def python_rollout(url: str, sessions: range, calls: int) -> tuple[int, list[str]]:
    """Every session of `sessions` at once, each with `calls` concurrent calls: (answered, errors)."""
    answered = 0
    errors: list[str] = []

    async def trajectory(s: int) -> None:
        nonlocal answered
        try:
            async with sdk_session(url) as session:
                async def one(i: int) -> None:
                    nonlocal answered
                    tool, args, expected = plan(s, i)
                    try:
                        result = await session.call_tool(tool, args)
                        text = only_text(result)
                        if result.is_error or text != expected:
                            errors.append(f"session {s} call {i}: {text[:200]}")
                        else:
                            answered += 1
                    except Exception as e:  # noqa: BLE001 - every failure is counted
                        errors.append(f"session {s} call {i}: {type(e).__name__}: {e}"[:300])

                async with anyio.create_task_group() as tg:
                    for i in range(calls):
                        tg.start_soon(one, i)
        except Exception as e:  # noqa: BLE001
            errors.append(f"session {s}: {type(e).__name__}: {e}"[:300])

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for s in sessions:
                tg.start_soon(trajectory, s)

    anyio.run(main)
    return answered, errors


if __name__ == "__main__":
    url, first, count, calls = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    answered, errors = python_rollout(url, range(first, first + count), calls)
    print(json.dumps({"answered": answered, "errors": errors[:20], "failed": len(errors)}))
