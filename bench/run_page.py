"""The web UI's run page of a finished run with a long history, in headless Chromium.

Two noop runs go through the service; then the bench writes into their run directories the
history of a long agent run (messages, tool calls and results, raw stdout chunks pointing into
a 5 MiB stdout, a few stderr chunks, the terminal state change last): 2,000 events for one, 10
for the other, the baseline. Written, not run: a script prints one raw chunk per 0.2 s, so 2,000
real events would take minutes. Each sample opens `/ui/runs/{id}` in a fresh browser context and
takes the time from navigation start until the conversation's last line (the terminal state
change) has been painted (two animation frames after it is in the DOM), with the first
contentful paint and the bytes the page fetched beside it. Big and small alternate.
"""

from __future__ import annotations

import json
from pathlib import Path

from bench.context import Context
from bench.jobs import wait_terminal
from bench.stack import Stack, StackOptions
from bench.stats import Row, ratio, summarize

FIGURE = "run-page"
BIG_EVENTS, BIG_STDOUT = 2000, 5 * 2**20
SMALL_EVENTS, SMALL_STDOUT = 10, 4096
RAW_TEXT_CAP = 2000  # what the worker puts in a raw chunk's event (worker/execution/output_tail.py)
CHROMIUM = ("/usr/bin/chromium", "/usr/bin/chromium-browser")

# Sets window.__shown to the time the conversation's last line, the run's end, was painted.
PAINTED = """
(() => {
  const seen = new MutationObserver(() => {
    const conv = document.getElementById("conversation");
    const last = conv && conv.lastElementChild;
    if (!last || !last.classList.contains("state") || !last.textContent.includes("succeeded")) return;
    seen.disconnect();
    requestAnimationFrame(() => requestAnimationFrame(() => { window.__shown = performance.now(); }));
  });
  seen.observe(document, { childList: true, subtree: true });
})();
"""
FETCHED = """
performance.getEntriesByType("resource").reduce((n, e) => n + (e.encodedBodySize || 0), 0)
  + (performance.getEntriesByType("navigation")[0] || {}).encodedBodySize
"""


def write_history(run_dir: Path, count: int, stdout_bytes: int) -> None:
    """Replace the finished run's events with `count` events of a long run (the real first
    events kept, its terminal event last) and its stdout with `stdout_bytes` bytes."""
    lines = (run_dir / "events.jsonl").read_text().splitlines()
    real = [json.loads(line) for line in lines]
    terminal, head = real[-1], real[:-1]
    stdout = "".join(
        json.dumps({"type": "item.completed", "item": {"n": i, "text": "x" * 180}}) + "\n"
        for i in range(stdout_bytes // 200 + 1)
    ).encode()[:stdout_bytes]
    (run_dir / "logs").mkdir(exist_ok=True)
    (run_dir / "logs" / "stdout.txt").write_bytes(stdout)
    made = count - len(head) - 1
    raws = max(1, made // 4)
    step, raw_no, events = max(1, len(stdout) // raws), 0, list(head)
    for i in range(made):
        kind = i % 4
        if i % 50 == 49:
            type_, data = "raw.stderr", {"text": f"warning {i}: retrying\n"}
        elif kind == 0:
            type_, data = "assistant.message", {"text": f"Step {i}: reading the next file. " * 4}
        elif kind == 1:
            type_, data = "tool.call", {"tool": "shell", "input": {"command": f"cat part-{i}.txt"}}
        elif kind == 2:
            type_, data = "tool.result", {"output": f"part {i}\n" + "line of output\n" * 30}
        else:
            start = raw_no * step
            chunk = stdout[start : start + step]
            raw_no += 1
            ref = {"stream": "stdout", "byte_from": start, "byte_to": start + len(chunk)}
            type_, data = "raw.stdout", {"raw_ref": ref, "text": chunk[:RAW_TEXT_CAP].decode()}
        events.append({**terminal, "type": type_, "data": data})
    events.append(terminal)
    for seq, event in enumerate(events, 1):
        event["seq"] = seq
    with (run_dir / "events.jsonl").open("w") as out:
        for event in events:
            out.write(json.dumps(event, separators=(",", ":")) + "\n")


def finished_run(stack: Stack, n: int) -> tuple[str, str]:
    """(request id, run id) of a noop run through the service."""
    client = stack.client()
    body = {"skill_id": "bench-noop", "input": {"n": n}, "runtime_options": {"no_cache": True}}
    rid = client.post("/v1/jobs", body).body["request_id"]
    status = wait_terminal(client, [rid])[rid]
    if status["status"] != "succeeded":
        raise RuntimeError(f"the noop run did not succeed: {status}")
    return rid, status["run_id"]


def open_page(browser, url: str) -> tuple[float, float, float]:
    """(last line painted, first contentful paint, bytes fetched) of one fresh page load."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.add_init_script(PAINTED)
        page.goto(url, wait_until="commit")
        page.wait_for_function("window.__shown !== undefined", timeout=120_000, polling=50)
        shown = page.evaluate("window.__shown") / 1000
        fcp = page.evaluate(
            "(performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime || 0"
        )
        page.wait_for_load_state("networkidle")
        return shown, fcp / 1000, page.evaluate(FETCHED)
    finally:
        context.close()


def chromium() -> str:
    for path in CHROMIUM:
        if Path(path).exists():
            return path
    raise RuntimeError("the run-page figure needs Chromium (deploy/install-browser.sh)")


def run(ctx: Context) -> list[Row]:
    from playwright.sync_api import sync_playwright

    samples = ctx.count(15, 3)
    root = ctx.scratch(FIGURE)
    times: dict[str, list[tuple[float, float, float]]] = {"big": [], "small": []}
    try:
        with Stack(root / "stack", StackOptions()) as stack:
            runs = {"big": finished_run(stack, 1), "small": finished_run(stack, 2)}
            urls = {}
            for name, (rid, run_id) in runs.items():
                big = name == "big"
                count, size = (BIG_EVENTS, BIG_STDOUT) if big else (SMALL_EVENTS, SMALL_STDOUT)
                write_history(stack.data_dir / "runs" / run_id, count, size)
                urls[name] = f"{stack.base_url}/ui/runs/{rid}"
            with sync_playwright() as pw:
                browser = pw.chromium.launch(
                    executable_path=chromium(), headless=True, args=["--no-sandbox"]
                )
                try:
                    for name in ("big", "small"):  # warm up
                        open_page(browser, urls[name])
                    for _ in range(samples):
                        for name in ("big", "small"):
                            times[name].append(open_page(browser, urls[name]))
                finally:
                    browser.close()
    finally:
        ctx.cleanup(root)
    big = summarize([t[0] for t in times["big"]])
    small = summarize([t[0] for t in times["small"]])
    fcp_big = summarize([t[1] for t in times["big"]]).median
    fcp_small = summarize([t[1] for t in times["small"]]).median
    kib_big = summarize([t[2] for t in times["big"]]).median / 1024
    kib_small = summarize([t[2] for t in times["small"]]).median / 1024
    ctx.log(f"{FIGURE}: big {big.median * 1000:.0f} ms, small {small.median * 1000:.0f} ms")
    return [
        Row(
            FIGURE,
            "run page, finished run of 2,000 events + 5 MiB stdout: last line painted",
            big.median,
            "s",
            small.median,
            "the same page, a run of 10 events",
            ratio(big.median, small.median),
            "< 1 s",
            big.median < 1.0,
            big.p99,
            small.p99,
            f"first contentful paint {fcp_big * 1000:.0f} / {fcp_small * 1000:.0f} ms; "
            f"fetched {kib_big:.0f} / {kib_small:.0f} KiB; {samples} samples each",
            {"big": times["big"], "small": times["small"]},
        )
    ]
