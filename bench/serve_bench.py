"""Serving, measured: N agent conversations at once through a server, behind `--backend openai`.

    python -m agent.export OUT --gguf none                                    # the merged model folder
    python bench/serve_bench.py OUT --device cuda --concurrency 1,8,32 --local
    python bench/serve_bench.py OUT --device cpu --servers llamacpp,vllm --concurrency 1,4,8 --conversations 8

Starts each of --servers on 127.0.0.1 in turn: `transformers serve OUT` (continuous batching unless
--no-continuous-batching), vLLM's CPU build (`make vllm`; OUT with the ppsf tool parser) or `llama_cpp.server`
on --gguf (default OUT/gguf/ppsf-smollm2-135m-q8_0.gguf), then runs
the questions of --cases-file as whole agent conversations (tool calls, tool results, answer) through
`agent.engine.openai_backend.OpenAIGenerator`, N at a time: each conversation is one agent in its own thread,
blocked on the server while it generates, so the server sees N streams. Every level runs the same
conversations. Per N it prints the wall time, conversations/s, p50/p95 latency of one conversation, and
throughput against one at a time, and how many conversations began with the same first call (or answer) as
on the first server one at a time. --local adds the agent on the local engine (`CachedGenerator` on --device),
one conversation at a time, in the same run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from servers import llama_cpp_serve, transformers_serve, vllm_serve  # noqa: E402 -- a sibling: bench/servers.py

from agent.engine.agent import AgentConfig  # noqa: E402
from agent.engine.backends import Backend, BackendOptions, build_backend  # noqa: E402
from agent.engine.models import recorded_tools, recorded_tools_shown  # noqa: E402
from agent.pharmacy import pharmacist_agent  # noqa: E402
from agent.ppsf import load_tokenizer  # noqa: E402

STARTUP_TIMEOUT = 300.0
SERVERS = {"transformers": "transformers serve", "vllm": "vLLM (CPU build)", "llamacpp": "llama_cpp.server"}


def questions(path: Path, count: int | None) -> list[str]:
    """The single-question cases of an eval file (cases given as a whole conversation are skipped)."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    out = [r["query"] for r in rows if isinstance(r.get("query"), str)]
    if not out:
        raise SystemExit(f"{path}: no case with a 'query'")
    return out[:count] if count else out


def conversation(make_agent, question: str) -> dict:
    """One agent conversation; its latency, steps and tokens (an exception is recorded, not raised)."""
    started = time.perf_counter()
    try:
        result = make_agent().run(question)
    except Exception as e:  # noqa: BLE001 -- a failed conversation is counted, the others go on
        return {"seconds": time.perf_counter() - started, "error": f"{type(e).__name__}: {e}"}
    stats = result.stats
    return {
        "seconds": time.perf_counter() - started,
        "steps": len(stats.steps),
        "generated_tokens": stats.generated_tokens,
        "first": first_move(getattr(result, "messages", None) or []),
        "error": None,
    }


def first_move(messages: list[dict]) -> list | str | None:
    """A conversation's first assistant message as comparable data: its calls [[name, arguments]], or its text."""
    first = next((m for m in messages if m.get("role") == "assistant"), None)
    if first is None:
        return None
    calls = first.get("tool_calls") or []
    if calls:
        return [[c["function"]["name"], json.loads(c["function"]["arguments"])] for c in calls]
    return first.get("content")


def level(make_agent, work: list[str], n: int) -> dict:
    """The conversations of `work`, n at a time; wall time and latencies (one untimed conversation first, so
    that no level pays the first call's start-up: CUDA kernels, the server's paged cache)."""
    conversation(make_agent, work[0])
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=n) as pool:
        runs = list(pool.map(lambda q: conversation(make_agent, q), work))
    wall = time.perf_counter() - started
    done = [r for r in runs if r["error"] is None]
    latencies = sorted(r["seconds"] for r in done)
    q = statistics.quantiles(latencies, n=20, method="inclusive") if len(latencies) > 1 else latencies * 19
    return {
        "concurrency": n,
        "conversations": len(runs),
        "errors": [r["error"] for r in runs if r["error"] is not None],
        "wall_seconds": wall,
        "conversations_per_second": len(done) / wall,
        "p50_seconds": statistics.median(latencies) if latencies else None,
        "p95_seconds": q[18] if latencies else None,
        "generated_tokens": sum(r["generated_tokens"] for r in done),
        "first": [r.get("first") for r in runs],  # in the order of work
    }


def machine(device: str) -> str:
    import torch
    from agent_bench import machine_line  # a sibling: this runs as a script

    gpu = torch.cuda.get_device_name() if device.startswith("cuda") and torch.cuda.is_available() else None
    return f"{gpu} (server), host {machine_line()}" if gpu else machine_line()


def report(rows: list[dict], local: dict | None, settings: str) -> str:
    """One table: per server (a row's "server", transformers serve by default) and level, against that server's
    one at a time; same first calls are counted against the first server's one at a time."""
    lines = [settings, ""]
    head = (
        "| system | at once | conversations | wall s | conv/s | p50 s | p95 s | same first move | "
        "vs 1 at a time | errors |"
    )
    lines.append(head)
    lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    reference = next((r for r in rows if r["concurrency"] == 1), None)

    def fmt(x: float | None) -> str:
        return "-" if x is None else f"{x:.2f}"

    def same(r: dict) -> str:
        if reference is None or "first" not in r or "first" not in reference:
            return "-"
        pairs = list(zip(r["first"], reference["first"], strict=False))
        return f"{sum(a == b and a is not None for a, b in pairs)}/{len(pairs)}"

    servers = list(dict.fromkeys(r.get("server", SERVERS["transformers"]) for r in rows))
    groups = [("local engine", [local] if local else [], rows[0] if rows else None)]
    for server in servers:
        mine = [r for r in rows if r.get("server", SERVERS["transformers"]) == server]
        groups.append((server, mine, next((r for r in mine if r["concurrency"] == 1), None)))
    for system, rs, base in groups:
        if system == "local engine":  # against the first server's one at a time
            base = reference
        for r in rs:
            speed = r["conversations_per_second"] / base["conversations_per_second"] if base else None
            lines.append(
                f"| {system} | {r['concurrency']} | {r['conversations']} | {r['wall_seconds']:.1f} | "
                f"{r['conversations_per_second']:.3f} | {fmt(r['p50_seconds'])} | {fmt(r['p95_seconds'])} | "
                f"{same(r)} | {fmt(speed)}x | {len(r['errors'])} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model", type=Path, help="a model folder speaking PPSF (`python -m agent.export OUT`)")
    p.add_argument("--device", default="cuda", help="where the server (and --local) runs: cuda, cuda:0, cpu")
    p.add_argument("--concurrency", default="1,8,32", help="conversations at once, comma-separated (1 is added)")
    p.add_argument("--conversations", type=int, default=64, help="conversations each level runs (questions cycled)")
    p.add_argument("--cases-file", type=Path, default=ROOT / "eval" / "freetext_dev.jsonl")
    p.add_argument("--cases", type=int, help="only the first N questions")
    p.add_argument("--max-steps", type=int, default=5)
    p.add_argument("--max-new-tokens", type=int, default=256)
    p.add_argument("--servers", default="transformers", help=f"comma-separated, in order: {', '.join(SERVERS)}")
    p.add_argument("--gguf", type=Path, help="llama_cpp.server's model (default OUT/gguf/*-q8_0.gguf)")
    p.add_argument("--threads", type=int, default=2, help="llama_cpp.server's threads (vLLM picks its own)")
    p.add_argument("--continuous-batching", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--local", action="store_true", help="also the agent on the local engine, one at a time")
    p.add_argument(
        "--dtype",
        default="auto",
        choices=["auto", "float32", "bfloat16", "float16"],
        help="weights of the server and --local alike (auto: bfloat16 on CUDA, float32 on CPU)",
    )
    p.add_argument("--json", type=Path, help="write the measurements here too (after every level)")
    p.add_argument("--log", type=Path, help="a folder for the servers' logs (default: a temporary one)")
    args = p.parse_args(argv)
    try:
        levels = sorted({1, *(int(x) for x in args.concurrency.split(",") if x.strip())})
    except ValueError:
        p.error(f"--concurrency {args.concurrency!r}: expected numbers like 1,8,32")
    if levels[0] < 1:
        p.error("--concurrency: at least 1 conversation at a time")
    if args.conversations < levels[-1]:
        p.error(f"--conversations {args.conversations}: fewer than the {levels[-1]} to run at once")
    if not (args.model / "config.json").is_file():
        p.error(f"{args.model}: not a model folder (no config.json); make one with `python -m agent.export OUT`")
    servers = [x.strip() for x in args.servers.split(",") if x.strip()]
    if not servers or any(x not in SERVERS for x in servers):
        p.error(f"--servers {args.servers!r}: choose from {', '.join(SERVERS)}")
    gguf = args.gguf or next(iter(sorted((args.model / "gguf").glob("*-q8_0.gguf"))), None)
    if "llamacpp" in servers and (gguf is None or not gguf.is_file()):
        p.error(f"--servers llamacpp needs a GGUF: --gguf PATH (none in {args.model / 'gguf'})")
    import openai

    from agent.engine.openai_backend import OpenAIGenerator

    prompts = questions(args.cases_file, args.cases)
    work = [prompts[i % len(prompts)] for i in range(args.conversations)]  # the same work at every level
    tokenizer = load_tokenizer(args.model)  # the folder's own files (an export carries this repo's)
    schemas, shown = recorded_tools(args.model), recorded_tools_shown(args.model)
    config = AgentConfig(max_steps=args.max_steps, max_new_tokens=args.max_new_tokens)
    dtype = args.dtype if args.dtype != "auto" else "bfloat16" if args.device.startswith("cuda") else "float32"
    local, rows = None, []

    def record() -> None:  # after every level: a run cut short by a time limit keeps what it measured
        if args.json:
            args.json.write_text(json.dumps({"local": local, "served": rows}, indent=2) + "\n", encoding="utf-8")

    if args.local:
        # The folder as it is (its adapter already merged), and no prefix state on disk: every run measures alike.
        options = BackendOptions(
            model=str(args.model), adapter="none", device=args.device, dtype=dtype, prefix_store=False
        )
        backend = build_backend(options)

        def local_agent():
            backend.generator.clear()  # each conversation from an empty cache, prefix snapshots too, as measured so far
            return pharmacist_agent(backend, config=config)

        local = level(local_agent, work, 1)
        print(f"local engine, 1 at a time: {local['conversations_per_second']:.3f} conv/s", flush=True)
        record()
        del backend
    logs = args.log or Path(tempfile.mkdtemp(prefix="serve-bench-"))
    logs.mkdir(parents=True, exist_ok=True)
    for server in servers:
        log = logs / f"{server}.log"
        if server == "transformers":
            serve_args = ["--dtype", dtype] + (["--continuous-batching"] if args.continuous_batching else [])
            serving = transformers_serve(args.model, log, device=args.device, args=serve_args, timeout=STARTUP_TIMEOUT)
            name = str(args.model)  # the model is named as the server was given it
        elif server == "vllm":
            serving, name = vllm_serve(args.model, log, max_num_seqs=max(levels)), str(args.model)
        else:
            serving, name = llama_cpp_serve(gguf, log, threads=args.threads), str(gguf)
        with serving as url:
            client = openai.OpenAI(base_url=url, api_key="EMPTY", timeout=600.0, max_retries=0)  # thread-safe

            def make_agent(url=url, name=name, client=client):
                # Built here, not by build_backend: one client for every thread, no retry and no /models check per
                # conversation (they would be timed); the folder's tools.json and tools_shown.txt, as build_backend.
                generator = OpenAIGenerator(name, tokenizer, base_url=url, timeout=600.0, client=client)
                backend = Backend("openai", generator, tokenizer, name, schemas, tuned=True, tools_shown=shown)
                return pharmacist_agent(backend, config=config)

            for n in levels:
                rows.append(level(make_agent, work, n) | {"server": SERVERS[server]})
                print(
                    f"{SERVERS[server]}, {n} at a time: {rows[-1]['conversations_per_second']:.3f} conv/s", flush=True
                )
                record()
    settings = (
        f"machine: {machine(args.device)}\nsettings: {len(work)} conversations per level ({len(prompts)} questions "
        f"of {args.cases_file.name}), "
        f"max_steps={args.max_steps}, max_new_tokens={args.max_new_tokens}, greedy, on {args.device}, {dtype}; "
        f"servers: {', '.join(SERVERS[x] for x in servers)}"
        + (
            f" (transformers serve {'with' if args.continuous_batching else 'without'} continuous batching)"
            if "transformers" in servers
            else ""
        )
        + (f"; llama_cpp.server: {gguf.name}, {args.threads} thread(s)" if "llamacpp" in servers else "")
        + f" (server logs: {logs})"
    )
    print(report(rows, local, settings))
    if args.json:
        args.json.write_text(json.dumps({"settings": settings, "local": local, "served": rows}, indent=2) + "\n")
    return 1 if any(r["errors"] for r in rows) or (local and local["errors"]) else 0


if __name__ == "__main__":
    raise SystemExit(main())
