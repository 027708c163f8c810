"""Load test of `bertlens serve` against in-process `Embedder` throughput and a simple baseline server.

Usage: python bench/serve_load.py [--requests 256] [--texts-per-request 4] [--concurrency 1,8,32,64]
                                  [--encoding base64,float] [--workers 1,2] [--onnx DIR] [--skip-baseline]

Starts each server on loopback in its own process, waits for /health, then runs bounded concurrent
clients (asyncio + httpx; a fixed number of requests per level; it stops by itself) with STS-B
sentences, and reports texts/s as a ratio to in-process `Embedder.encode` on the same texts (measured
in this run), p50/p99 latency and errors. Servers: `bertlens serve` (default model, mean pooling,
dynamic batching) and the baseline a user would write: sentence-transformers `encode` behind a FastAPI
endpoint, one request per call. Then a fault phase against `bertlens serve` under load: malformed
bodies, oversize inputs and clients that disconnect mid-request; afterwards the server must still
answer a valid request correctly. Every figure comes with the CPU it ran on.

`--encoding`: the response encodings to load `bertlens serve` with. base64 is what the official `openai`
client asks for when the caller does not say (openai-python sends encoding_format="base64" and decodes it);
float is what curl users get. The baseline answers float lists only. Each row also gives the CPU the server
and the load generator used (cores busy over the wall time), since all of them share this machine's cores.
`--clients`: httpx (a full async client library, as an application would use) and/or raw (kept-alive sockets
writing the same HTTP/1.1 requests: on a machine whose cores the server shares, it leaves them to the server,
as clients on other machines would).
`--workers`: the `bertlens serve --workers` settings to load, one server each (default 1,2). For
`bertlens serve` each row also says what share of the wall time its workers spent encoding and how fast
they encoded meanwhile (from its /metrics): throughput = share x speed, which tells idle time from
contention. Each row also gives the server's own CPU (issue #28): per text, the CPU of its main thread, which runs the
event loop (parsing, token counts for the limits, batching bookkeeping, serialising), next to the CPU of every
other thread (the encode workers and the threads the model computes on), from /proc per-thread times; their
ratio is the overhead of serving over encoding, measured so that two cores suffice. `--onnx DIR`: serve an ONNX
export instead (`--backend onnx`), measured against in-process
`OnnxEmbedder` on the same texts.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import itertools
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import orjson

from bertlens.metrics.geometry import row_cosine
from common import REPO, lscpu_summary, sts_sentences

BASELINE_APP = """
import sys
import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel
from sentence_transformers import SentenceTransformer

model = SentenceTransformer(sys.argv[2], device="cpu")
app = FastAPI()

class Body(BaseModel):
    input: list[str]

@app.post("/v1/embeddings")
def embed(body: Body):
    vectors = model.encode(body.input, batch_size=32)
    return {"data": [{"index": i, "embedding": v.tolist()} for i, v in enumerate(vectors)]}

@app.get("/health")
def health():
    return {"status": "ok"}

uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="error")
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(command: list[str], port: int) -> subprocess.Popen:
    import httpx

    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return process
        except httpx.HTTPError:
            time.sleep(0.2)
        if process.poll() is not None:
            raise SystemExit(f"server failed to start: {process.stderr.read().decode()[-1000:]}")
    process.kill()
    raise SystemExit("server did not answer /health within 120 s")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def thread_cpu_seconds(pid: int) -> dict[int, float]:
    """User + system CPU seconds of each thread of a process so far: {thread id: seconds} (Linux /proc)."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # the thread ended meanwhile
            continue
        out[int(task.name)] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return out


def own_cost(before: dict[int, float], after: dict[int, float], pid: int) -> tuple[float, float]:
    """(event-loop CPU s, encode-side CPU s) between two thread snapshots. The main thread (id = pid) runs the
    event loop: parsing, the token counts for the limits, batching bookkeeping and serialising; every other thread
    is the encode side (the batcher's worker threads and the BLAS/OpenMP threads the model runs on)."""
    delta = {tid: after[tid] - before.get(tid, 0.0) for tid in after}
    loop = delta.pop(pid, 0.0)
    return loop, sum(delta.values())


def encode_seconds(url: str) -> float:
    """Seconds `bertlens serve` has spent encoding batches so far (its /metrics histogram sum)."""
    import httpx

    for line in httpx.get(url + "/metrics").text.splitlines():
        if line.startswith("bertlens_encode_seconds_sum"):
            return float(line.split()[1])
    return 0.0


def decode(item: dict) -> np.ndarray:
    vector = item["embedding"]
    return np.frombuffer(base64.b64decode(vector), dtype="<f4") if isinstance(vector, str) else np.array(vector)


async def raw_post(reader, writer, path: str, body: bytes) -> tuple[int, bytes]:
    """One HTTP/1.1 request on a kept-alive connection, read by Content-Length: a load generator that costs
    the shared cores far less than a full client library (the server gets no shortcut: same bytes on the wire)."""
    writer.write(
        b"POST %s HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
        % (path.encode(), len(body))
        + body
    )
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = int(head.lower().split(b"content-length:", 1)[1].split(b"\r\n", 1)[0])
    return status, await reader.readexactly(length)


async def load(
    url: str,
    batches: list[list[str]],
    concurrency: int,
    encoding: str = "float",
    pid: int = 0,
    metrics: bool = False,
    raw: bool = False,
) -> dict:
    """`concurrency` clients post the batches as /v1/embeddings requests until none are left; `raw`: with
    `raw_post` on one kept-alive connection each instead of httpx."""
    import httpx

    latencies, errors = [], 0
    queue = list(enumerate(batches))
    vectors: dict[int, np.ndarray] = {}

    def record(i: int, started: float, status: int, payload: bytes) -> None:
        nonlocal errors
        latencies.append(time.perf_counter() - started)
        if status != 200:
            errors += 1
            return
        vectors[i] = np.stack([decode(d) for d in orjson.loads(payload)["data"]])

    def body(texts: list[str]) -> dict:
        return {"input": texts, "model": "m", "encoding_format": encoding}

    async def client(http: httpx.AsyncClient) -> None:
        while queue:
            i, texts = queue.pop()
            started = time.perf_counter()
            reply = await http.post(url + "/v1/embeddings", json=body(texts))
            record(i, started, reply.status_code, reply.content)

    async def raw_client() -> None:
        host, port = url.removeprefix("http://").split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        try:
            while queue:
                i, texts = queue.pop()
                started = time.perf_counter()
                record(i, started, *await raw_post(reader, writer, "/v1/embeddings", orjson.dumps(body(texts))))
        finally:
            writer.close()

    limits = httpx.Limits(max_connections=concurrency)
    encoding_before = encode_seconds(url) if metrics else 0.0
    threads_before = thread_cpu_seconds(pid) if pid else {}
    async with httpx.AsyncClient(timeout=300, limits=limits) as http:
        start, client_cpu, server_cpu = time.perf_counter(), time.process_time(), cpu_seconds(pid) if pid else 0.0
        clients = (raw_client() if raw else client(http) for _ in range(concurrency))
        await asyncio.gather(*clients)
        seconds = time.perf_counter() - start
        client_cpu, server_cpu = time.process_time() - client_cpu, (cpu_seconds(pid) - server_cpu) if pid else 0.0
    loop_cpu, encode_cpu = own_cost(threads_before, thread_cpu_seconds(pid), pid) if pid else (0.0, 0.0)
    encoding = (encode_seconds(url) - encoding_before) if metrics else 0.0
    texts = sum(len(b) for b in batches)
    ordered = np.concatenate([vectors[i] for i in sorted(vectors)]) if vectors else np.zeros((0, 1))
    return {
        "texts_per_s": texts / seconds,
        "p50_ms": 1000 * float(np.percentile(latencies, 50)),
        "p99_ms": 1000 * float(np.percentile(latencies, 99)),
        "errors": errors,
        "vectors": ordered,
        "server_cores": server_cpu / seconds,
        "client_cores": client_cpu / seconds,
        "encoding_share": encoding / seconds,  # worker-seconds spent encoding per second (up to --workers)
        "encoding_texts_per_s": texts / encoding if encoding else 0.0,  # per worker, while encoding
        "loop_cpu_ms_per_text": 1000 * loop_cpu / texts,
        "encode_cpu_ms_per_text": 1000 * encode_cpu / texts,
    }


async def faults(url: str, batches: list[list[str]]) -> dict:
    """Valid load with bad requests and disconnects mixed in; returns counts by outcome."""
    import httpx

    bad_bodies = [
        (b"{not json", "application/json"),
        (b'{"input": ""}', "application/json"),
        (b'{"input": [1, 2, 3]}', "application/json"),
        (b'{"input": "a"}', "text/plain"),
        (b'{"input": "' + b"x" * 30_000 + b'"}', "application/json"),  # over --max-chars 20000
        (b'{"input": [' + b",".join([b'"a"'] * 300) + b"]}", "application/json"),  # over --max-inputs 256
    ]
    outcome = {"valid_ok": 0, "valid_failed": 0, "invalid_4xx": 0, "invalid_other": 0, "disconnects": 0}
    async with httpx.AsyncClient(timeout=300) as http:

        async def valid(texts):
            reply = await http.post(url + "/v1/embeddings", json={"input": texts, "model": "m"})
            outcome["valid_ok" if reply.status_code == 200 else "valid_failed"] += 1

        async def invalid(body, content_type):
            reply = await http.post(url + "/v1/embeddings", content=body, headers={"Content-Type": content_type})
            ok = 400 <= reply.status_code < 500 and "error" in reply.json()
            outcome["invalid_4xx" if ok else "invalid_other"] += 1

        async def disconnect(texts):
            try:
                await asyncio.wait_for(http.post(url + "/v1/embeddings", json={"input": texts * 8}), timeout=0.005)
            except (TimeoutError, httpx.HTTPError):
                outcome["disconnects"] += 1

        tasks = []
        for i, texts in enumerate(batches):
            tasks.append(valid(texts))
            if i % 4 == 0:
                tasks.append(invalid(*bad_bodies[i // 4 % len(bad_bodies)]))
            if i % 8 == 0:
                tasks.append(disconnect(texts))
        await asyncio.gather(*tasks)
    return outcome


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=256)
    parser.add_argument("--texts-per-request", type=int, default=4)
    parser.add_argument("--concurrency", default="1,8,32,64")
    parser.add_argument("--precision", default="fp32", help="the served recipe's precision (fp32 is comparable)")
    parser.add_argument("--encoding", default="base64,float", help="response encodings for bertlens serve")
    parser.add_argument("--workers", default="1,2", help="bertlens serve --workers settings to load")
    parser.add_argument(
        "--onnx", help="an ONNX export directory: serve it (--backend onnx) and compare with OnnxEmbedder"
    )
    parser.add_argument("--skip-baseline", action="store_true", help="do not load the sentence-transformers server")
    parser.add_argument(
        "--clients",
        default="httpx",
        help="load generators: httpx (a full async client), raw (kept-alive sockets, little CPU), or both: httpx,raw",
    )
    args = parser.parse_args()
    from bertlens.embedding.embedder import Embedder
    from bertlens.models import default_model_dir
    from bertlens.representation.recipe import Recipe

    texts = [t for t in sts_sentences() if t.strip()][: args.requests * args.texts_per_request]
    batches = [texts[i : i + args.texts_per_request] for i in range(0, len(texts), args.texts_per_request)]
    print(f"{len(batches)} requests x {args.texts_per_request} STS-B sentences; CPU: {lscpu_summary()}")
    if args.onnx:
        from bertlens.embedding.onnx_backend import OnnxEmbedder

        embedder = OnnxEmbedder(args.onnx)
        served = ["--backend", "onnx", "--model", str(Path(args.onnx).resolve())]
        int8 = "int8" in embedder.record["precision"]
        print(f"served and in-process: the ONNX export {args.onnx} ({embedder.record['precision']})")
    else:
        embedder = Embedder(Recipe(precision=args.precision))
        served = ["--precision", args.precision]
        int8 = False
    embedder.encode(texts[:64])
    start = time.perf_counter()
    reference = embedder.encode(texts)
    in_process = len(texts) / (time.perf_counter() - start)
    print(f"in-process {type(embedder).__name__}.encode: {in_process:,.0f} texts/s (the 1.00x reference)")
    port = free_port()
    servers = {
        f"bertlens serve --workers {workers}": (
            [sys.executable, "-m", "bertlens", "serve", "--port", str(port), *served, "--workers", workers],
            port,
        )
        for workers in args.workers.split(",")
    }
    if not args.skip_baseline:
        base_port = free_port()
        baseline = Path(REPO / "out" / "serve_baseline_app.py")
        baseline.parent.mkdir(exist_ok=True)
        baseline.write_text(BASELINE_APP)
        servers["sentence-transformers encode in FastAPI, one request per call (baseline)"] = (
            [sys.executable, str(baseline), str(base_port), str(default_model_dir())],
            base_port,
        )
    print(
        "| server | response | load generator | concurrency | texts/s | ratio to in-process | p50 ms | p99 ms | errors | "
        "min cosine to in-process | cores busy: server / load generator | encoding share of the wall time (per "
        "worker) | texts/s while encoding (per worker) | server's own CPU: event loop ms/text, encode side ms/text, "
        "overhead |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, (command, server_port) in servers.items():
        process = start_server(command, server_port)
        url = f"http://127.0.0.1:{server_port}"
        encodings = args.encoding.split(",") if name.startswith("bertlens") else ["float"]
        try:
            asyncio.run(load(url, batches[:8], 4))  # warm-up
            for encoding, clients in itertools.product(encodings, args.clients.split(",")):
                for level in (int(c) for c in args.concurrency.split(",")):
                    metrics = name.startswith("bertlens")
                    result = asyncio.run(
                        load(url, batches, level, encoding, process.pid, metrics=metrics, raw=clients == "raw")
                    )
                    cos = row_cosine(result["vectors"], reference[: len(result["vectors"])])
                    print(
                        f"| {name} | {encoding} | {clients} | {level} | {result['texts_per_s']:,.0f} | "
                        f"{result['texts_per_s'] / in_process:.2f}x | {result['p50_ms']:.0f} | {result['p99_ms']:.0f} | "
                        f"{result['errors']} | {float(cos.min()):.6f} | "
                        f"{result['server_cores']:.2f} / {result['client_cores']:.2f} | "
                        f"{result['encoding_share']:.2f} | {result['encoding_texts_per_s']:,.0f} | "
                        f"{result['loop_cpu_ms_per_text']:.3f}, {result['encode_cpu_ms_per_text']:.3f}, "
                        f"{result['loop_cpu_ms_per_text'] / max(result['encode_cpu_ms_per_text'], 1e-9):.1%} |",
                        flush=True,
                    )
            if name.startswith("bertlens"):
                outcome = asyncio.run(faults(url, batches[:64]))
                after = asyncio.run(load(url, batches[:4], 1))
                got, ref = after["vectors"], reference[: len(after["vectors"])]
                cosine = row_cosine(got, ref)
                # dynamic int8 scales activations per batch, so a text's vector moves a little with its batch mates
                correct = float(cosine.min()) >= 0.98 if int8 else float(np.abs(got - ref).max()) < 1e-4
                print(f"fault phase: {outcome}; afterwards a valid request answered correctly: {correct}", flush=True)
        finally:
            process.terminate()
            process.wait(timeout=60)


if __name__ == "__main__":
    main()
