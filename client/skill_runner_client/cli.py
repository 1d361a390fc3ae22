"""The command line client: `skill-runner-client COMMAND ...` (also `skill-runner COMMAND`, which
hands it every command but serve and migrate). Exit codes: 0 done (the run succeeded), 1 a run
failed or the service refused, 2 bad arguments, a bad batch file or an output path that cannot
be written, 130 interrupted, 141 its output's reader went away (`| head`)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

from skill_runner_client import commands
from skill_runner_client.batch import BatchAborted, BatchOptions, BatchRun
from skill_runner_client.batch_file import BadLine, read_batch
from skill_runner_client.client import DEFAULT_URL, Client
from skill_runner_client.errors import OutputNotWritable, SkillRunnerError

STDIN_FILE = "stdin.jsonl"
USAGE_ERROR, INTERRUPTED, BROKEN_PIPE = 2, 130, 141  # 141: 128 + SIGPIPE, as a shell has it


def batch(args: argparse.Namespace, client: Client) -> int:
    path, base = Path(args.jobs_file), None
    if args.jobs_file == "-":  # JSON Lines on stdin, kept in --out: its path keys the jobs
        if not args.out:
            raise ValueError("batch - (the jobs on stdin) needs --out DIR")
        path, base = keep_stdin(Path(args.out)), Path.cwd()
    if not path.is_file():
        print(f"{args.prog}: no batch file at {path}", file=sys.stderr)
        return USAGE_ERROR
    try:
        jobs = read_batch(path, base)  # every line checked before anything is sent
    except (BadLine, OSError, UnicodeDecodeError) as exc:
        print(f"{args.prog}: bad batch file: {exc}; nothing was submitted", file=sys.stderr)
        return USAGE_ERROR
    out = Path(args.out or path.with_suffix("").name + ".out")
    options = BatchOptions(out, args.concurrency, args.max_queued, args.resume, args.artifacts)
    try:
        code = BatchRun(client, path, jobs, options).run()
    except KeyboardInterrupt:
        raise KeyboardInterrupt("interrupted; --resume continues the batch") from None
    if args.json:
        print(json.dumps({"summary": str(out / "summary.jsonl"), "exit_code": code}))
    return code


def keep_stdin(out: Path) -> Path:
    """stdin's jobs as `out`/stdin.jsonl (written whole): the batch file of a batch read from
    a pipe, so its jobs' keys, and `--resume` with the same lines piped again, work as for a
    file."""
    path = out / STDIN_FILE
    try:
        out.mkdir(parents=True, exist_ok=True)
        part = path.with_name(STDIN_FILE + ".part")
        part.write_bytes(sys.stdin.buffer.read())
        os.replace(part, path)
    except OSError as exc:
        raise OutputNotWritable(path, exc) from None
    return path


def _common(parser: argparse.ArgumentParser, defaults: bool) -> None:
    """--server, --token, --json; on the subcommands too (without defaults, so an option given
    before the command is not reset by the subcommand's parser)."""
    keep = argparse.SUPPRESS
    parser.add_argument(
        "--server",
        default=(os.environ.get("SKILL_RUNNER_URL") or DEFAULT_URL) if defaults else keep,
        help=f"the service's URL (default: $SKILL_RUNNER_URL or {DEFAULT_URL})",
    )
    parser.add_argument(
        "--token",
        default=os.environ.get("SKILL_RUNNER_TOKEN") if defaults else keep,
        help="bearer token (default: $SKILL_RUNNER_TOKEN)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        default=False if defaults else keep,
        help="machine-readable output",
    )


def build_parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description="Client of the Agent Skill Runner.")
    _common(parser, True)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, fn: Callable[..., int], help: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help, description=help)
        _common(p, False)
        p.set_defaults(fn=fn)
        return p

    p = command("submit", commands.submit, "create a job (and upload its files)")
    p.add_argument("skill_id")
    p.add_argument("--engine")
    p.add_argument("--model")
    p.add_argument("-p", "--param", action="append", metavar="KEY=VALUE", help="a parameter")
    p.add_argument("--parameters", metavar="JSON", help="the parameters as one JSON object")
    p.add_argument("-i", "--input", action="append", metavar="KEY=VALUE", help="an inline input")
    p.add_argument("--input-json", metavar="JSON", help="the inline input as one JSON object")
    p.add_argument("-f", "--file", action="append", metavar="FIELD=PATH", help="an input file")
    p.add_argument("--mode", choices=("auto", "interactive"), help="execution mode")
    p.add_argument("--runtime-options", metavar="JSON")
    p.add_argument("--no-cache", action="store_true", help="skip the result cache")
    p.add_argument("--idempotency-key", help="sending the same key again returns the first job")
    p.add_argument("--wait", action="store_true", help="wait and print the result")
    p.add_argument("--timeout", type=_seconds, help="with --wait: give up after this many seconds")

    p = command("batch", batch, "run every job of a JSON Lines or CSV file")
    p.add_argument(
        "jobs_file",
        metavar="JOBS_FILE",
        help="a .jsonl file (one job object a line) or a .csv file; - reads JSON Lines from "
        "stdin (with --out)",
    )
    p.add_argument("--concurrency", type=_positive, default=8, help="requests at once (8)")
    p.add_argument(
        "--max-queued", type=_positive, default=500, help="jobs submitted, not yet done (500)"
    )
    p.add_argument("--out", help="output folder (default: JOBS_FILE's name + .out)")
    p.add_argument("--resume", action="store_true", help="continue a batch in --out")
    p.add_argument("--artifacts", action="store_true", help="download each job's artifacts")

    for name, fn, help in (
        ("wait", commands.wait, "wait until a run ends; exit 0 when it succeeded"),
        ("result", commands.result, "print a run's result"),
        ("status", commands.status, "print a run's status"),
        ("cancel", commands.cancel, "cancel a run"),
    ):
        p = command(name, fn, help)
        p.add_argument("request_id")
        if name == "wait":
            p.add_argument("--timeout", type=_seconds, help="give up after this many seconds")
        if name == "result":
            p.add_argument("--wait", action="store_true", help="wait for the run to end first")
            p.add_argument(
                "--timeout", type=_seconds, help="with --wait: give up after this many seconds"
            )

    p = command("logs", commands.logs, "print a run's log; -f follows it as it grows")
    p.add_argument("request_id")
    p.add_argument("-f", "--follow", action="store_true")
    p.add_argument("--stream", choices=("stdout", "stderr", "prompt"), default="stdout")

    p = command("bundle", commands.bundle, "download a run's bundle zip")
    p.add_argument("request_id")
    p.add_argument("-o", "--output", required=True, metavar="FILE")

    p = command("list", commands.list_jobs, "list jobs, newest first")
    p.add_argument("--status")
    p.add_argument("--skill")
    p.add_argument("--engine")
    p.add_argument("--limit", type=_positive, default=50)
    p.add_argument("--all", action="store_true", help="every page")

    p = command("reply", commands.reply, "answer an interactive run's pending question")
    p.add_argument("request_id")
    answer = p.add_mutually_exclusive_group(required=True)
    answer.add_argument("--text", help="a free-text answer")
    answer.add_argument("--choice", metavar="VALUE", help="the value of one of the options")
    answer.add_argument("--confirm", choices=("yes", "no"))
    answer.add_argument("--response", metavar="JSON", help="any JSON answer (fill_fields)")
    p.add_argument("--interaction-id", type=_positive, help="default: the pending one")
    p.add_argument("--idempotency-key", help="a repeated reply with this key counts once")

    p = command("skills", commands.skills, "list installed skills, or show one")
    p.add_argument("skill_id", nargs="?")

    p = command(
        "install", commands.install, "install or update a skill from its package zip or folder"
    )
    p.add_argument("package", metavar="PACKAGE.zip|DIR", help="a folder is zipped here")

    command("engines", commands.engines, "list the engine CLIs")
    return parser


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of seconds") from None
    if not value >= 0:  # negative, or nan
        raise argparse.ArgumentTypeError("must be a number of seconds, 0 or more")
    return value


def _code(exc: Exception) -> str:
    """The --json error code of a failure the service did not answer."""
    if isinstance(exc, ValueError):
        return "BAD_ARGUMENT"
    if isinstance(exc, TimeoutError):
        return "TIMEOUT"
    return "BATCH_STOPPED" if isinstance(exc, BatchAborted) else "LOCAL_ERROR"


def main(argv: list[str] | None = None, prog: str = "skill-runner-client") -> int:
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    args.prog = prog
    try:
        with Client(args.server, args.token or None) as client:
            code = int(args.fn(args, client))
        sys.stdout.flush()  # here, where a reader gone away is caught
        return code
    except BrokenPipeError:  # `| head`: the reader has what it wanted; nothing to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nor at exit's flush
        return BROKEN_PIPE
    except SkillRunnerError as exc:
        if args.json:
            print(json.dumps(exc.body), file=sys.stderr)
        else:
            print(f"{prog}: {exc.code}: {exc.explained()}", file=sys.stderr)
        return 1
    except (ValueError, OSError, BatchAborted, TimeoutError) as exc:
        if args.json:  # as the service's error body, under a code of the client's own
            print(json.dumps(SkillRunnerError(None, _code(exc), str(exc)).body), file=sys.stderr)
        else:
            print(f"{prog}: {exc}", file=sys.stderr)
        return USAGE_ERROR if isinstance(exc, ValueError) else 1
    except KeyboardInterrupt as exc:
        message = str(exc) or "interrupted"  # submit --wait names the job it leaves running
        if args.json:
            print(json.dumps(SkillRunnerError(None, "INTERRUPTED", message).body), file=sys.stderr)
        else:
            print(f"{prog}: {message}", file=sys.stderr)
        return INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
