"""Streaming memory of the API process.

Upload of a 1 GiB zip (POST /v1/jobs/{id}/upload, raw application/zip body streamed from a
file) and download of a 1 GiB bundle (GET /v1/jobs/{id}/bundle of a run whose script wrote a
1 GiB artifact). The RSS of every gunicorn worker is sampled every 20 ms; the figure is the
largest growth of one worker over its RSS just before the transfer. Baselines from the same
run: the payload size (ratio = growth / payload) and, for speed, a local file copy.
Files are deleted as soon as they are no longer needed.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
import zipfile
from pathlib import Path

from bench.context import Context
from bench.jobs import wait_terminal
from bench.stack import Stack, StackOptions
from bench.stats import Row

FIGURE = "streaming-memory"
SAMPLE_SEC = 0.02


class RssSampler:
    """Peak RSS growth of each of `procs` while the `with` block runs."""

    def __init__(self, procs) -> None:
        self.procs = procs
        self.base = {p.pid: p.memory_info().rss for p in procs}
        self.peak = dict(self.base)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            for proc in self.procs:
                try:
                    rss = proc.memory_info().rss
                except Exception:
                    continue
                self.peak[proc.pid] = max(self.peak[proc.pid], rss)
            time.sleep(SAMPLE_SEC)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *_exc) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def growth_mib(self) -> float:
        return max(self.peak[pid] - self.base[pid] for pid in self.base) / 2**20


def write_zip(path: Path, size: int) -> None:
    """A stored (uncompressed) zip with one incompressible member `blob.bin` of `size` bytes."""
    block = os.urandom(1 << 20)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
        with zf.open("blob.bin", "w", force_zip64=True) as member:
            written = 0
            while written < size:
                chunk = block[: size - written]
                member.write(chunk)
                written += len(chunk)


def copy_rate(src: Path) -> float:
    """Seconds to copy `src` on the same disk (the speed baseline)."""
    dst = src.with_suffix(".copy")
    started = time.perf_counter()
    shutil.copyfile(src, dst)
    os.sync()
    elapsed = time.perf_counter() - started
    dst.unlink()
    return elapsed


def upload(stack: Stack, zip_path: Path) -> tuple[float, float]:
    client = stack.client()
    rid = client.post("/v1/jobs", {"skill_id": "bench-upload"}).body["request_id"]
    size = zip_path.stat().st_size
    with RssSampler(stack.web_workers()) as sampler, zip_path.open("rb") as fh:
        resp = client.request(
            "POST",
            f"/v1/jobs/{rid}/upload",
            fh,
            {"Content-Type": "application/zip", "Content-Length": str(size)},
        )
    if resp.status != 200:
        raise RuntimeError(f"upload failed: {resp.status} {resp.body}")
    wait_terminal(client, [rid])
    shutil.rmtree(stack.data_dir / "requests" / rid, ignore_errors=True)
    return sampler.growth_mib, resp.seconds


def download(stack: Stack, size_mib: int) -> tuple[float, float, int]:
    client = stack.client()
    rid = client.post(
        "/v1/jobs", {"skill_id": "bench-big-artifact", "parameter": {"size_mib": size_mib}}
    ).body["request_id"]
    status = wait_terminal(client, [rid], timeout=1800)[rid]
    if status["status"] != "succeeded":
        raise RuntimeError(f"big artifact run failed: {status}")
    bundle = stack.data_dir / "runs" / status["run_id"] / "bundle"
    shutil.rmtree(bundle, ignore_errors=True)  # the GET streams its own zip; free the disk
    with RssSampler(stack.web_workers()) as sampler:
        code, nbytes, seconds = client.stream_get(f"/v1/jobs/{rid}/bundle")
    if code != 200:
        raise RuntimeError(f"bundle download failed: {code}")
    shutil.rmtree(stack.data_dir / "runs" / status["run_id"], ignore_errors=True)
    return sampler.growth_mib, seconds, nbytes


def run(ctx: Context) -> list[Row]:
    size_mib = ctx.count(1024, 64)
    size = size_mib * 2**20 - 4096  # the zip itself is then ~size_mib MiB
    root = ctx.scratch(FIGURE)
    try:
        with Stack(
            root / "stack",
            StackOptions(extra_env={"SKILL_RUNNER_UPLOAD_MAX_BYTES": str(2 * size_mib * 2**20)}),
        ) as stack:
            zip_path = root / "upload.zip"
            write_zip(zip_path, size)
            zip_mib = zip_path.stat().st_size / 2**20
            copy_s = copy_rate(zip_path)
            up_growth, up_s = upload(stack, zip_path)
            zip_path.unlink()
            ctx.log(f"{FIGURE}: upload {zip_mib:.0f} MiB in {up_s:.1f}s, RSS +{up_growth:.1f} MiB")
            down_growth, down_s, nbytes = download(stack, size_mib)
            ctx.log(
                f"{FIGURE}: download {nbytes / 2**20:.0f} MiB in {down_s:.1f}s, "
                f"RSS +{down_growth:.1f} MiB"
            )
    finally:
        ctx.cleanup(root)
    return [
        Row(
            FIGURE,
            f"upload of a {zip_mib:.0f} MiB zip: peak RSS growth of the API worker",
            up_growth,
            "MiB",
            zip_mib,
            "payload",
            up_growth / zip_mib,
            "<= 64 MiB",
            up_growth <= 64,
            note=f"{zip_mib / up_s:.0f} MiB/s vs local copy {zip_mib / copy_s:.0f} MiB/s",
        ),
        Row(
            FIGURE,
            f"download of a {nbytes / 2**20:.0f} MiB bundle: peak RSS growth of the API worker",
            down_growth,
            "MiB",
            nbytes / 2**20,
            "payload",
            down_growth / (nbytes / 2**20),
            "<= 64 MiB",
            down_growth <= 64,
            note=f"{nbytes / 2**20 / down_s:.0f} MiB/s (zip built while streaming)",
        ),
    ]
