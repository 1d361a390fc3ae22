"""`skill-runner`: migrate the database, or serve everything on the embedded default; every
other command is the client's (client/skill_runner_client/cli.py)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from runner_core.config_file import CONFIG_ENV
from runner_core.settings import SettingsError, load_settings


def make_data_dir(settings) -> None:
    """The data folder, made when missing; a SettingsError (one line, exit 2) when it cannot
    be (a typo in SKILL_RUNNER_DATA_DIR, a read-only place), not a traceback."""
    try:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SettingsError(
            f"cannot make the data folder {settings.data_dir}: {_reason(exc)}"
        ) from None


def migrate(_args) -> int:
    from sqlalchemy.exc import ArgumentError, OperationalError

    # alembic: only this command needs it
    from runner_core.store.migrate import SchemaAhead, upgrade

    settings = load_settings()
    make_data_dir(settings)
    try:
        upgrade(settings.database_url)
    except (OperationalError, ArgumentError) as exc:  # not answering, or not a database URL
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        raise SettingsError(f"the database at {_database(settings)}: {reason}") from None
    except SchemaAhead as exc:  # this older code was started on a newer install's database
        raise SettingsError(f"the database at {_database(settings)}: {exc}") from None
    print(f"database at {_database(settings)} is up to date")
    return 0


def _database(settings) -> str:
    """The database URL as printed: its password masked (serve prints this line at each start,
    into the service's log)."""
    from launcher.effective_config import shown

    return shown("database_url", settings.database_url)


def start_migration(args) -> int:
    """`migrate` in a forked child, so the service that goes on never holds alembic and the
    migration scripts (about 11 MiB it would keep for nothing); returns the child's pid."""
    sys.stdout.flush()
    pid = os.fork()  # no thread runs yet: the child starts from a quiet copy
    if pid == 0:
        code = 1
        try:
            code = migrate(args)
        except SettingsError as exc:  # one line, as the command says it: no traceback
            print(f"skill-runner: configuration error: {exc}", file=sys.stderr)
            code = 2
        except BaseException:
            import traceback

            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    return pid


def finish_migration(pid: int) -> None:
    """Wait for the migration's child; raises SystemExit when it failed."""
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    if code == 2:  # the child said why in one line
        raise SystemExit(2)
    if code != 0:
        raise SystemExit(f"skill-runner: the migration failed (exit code {code})")


def show_config(_args) -> int:
    """The effective settings, one `name = value` per line, secrets masked."""
    from launcher.effective_config import effective_lines

    for line in effective_lines(load_settings(), os.environ):
        print(line)
    return 0


def validate(args) -> int:
    """Each skill directory checked as an upload would be: one line per problem, exit 1 on any."""
    import json

    from runner_core.skills.check import check_skill_dir

    installed = Path(args.skills_dir or os.environ.get("SKILL_RUNNER_SKILLS_DIR", "./skills"))
    checks = [check_skill_dir(Path(d), installed) for d in args.dirs]
    if args.json:
        print(json.dumps([c.as_dict() for c in checks], indent=2))
    else:
        for c in checks:
            for problem in c.errors:
                print(f"{c.path}: {problem}")
            for warning in c.warnings:
                print(f"{c.path}: warning: {warning}")
            if c.valid:
                print(f"{c.path}: ok ({c.skill_id})")
    return 0 if all(c.valid for c in checks) else 1


def new(args) -> int:
    """A new skill directory that passes `validate` as written."""
    from runner_core.skills.scaffold import ScaffoldError, new_skill

    try:
        root = new_skill(Path(args.dir), args.name, args.kind)
    except ScaffoldError as exc:
        print(f"skill-runner: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # --dir is a bad argument too: one line, not a traceback
        print(
            f"skill-runner: cannot write {Path(args.dir) / args.name}: {_reason(exc)}",
            file=sys.stderr,
        )
        return 2
    print(f"{root}: a new {args.kind} skill; check it with: skill-runner validate {root}")
    print(f"play its test cases ({root / 'tests' / 'skill-test.json'}): skill-runner test {root}")
    return 0


def skill_test(args) -> int:
    """Each case of the skill's test file through a throw-away service; exit 0, 1 or 2."""
    from launcher.skill_test import SkillTestError, run_skill_test

    try:
        installed = Path(args.skills_dir or os.environ.get("SKILL_RUNNER_SKILLS_DIR", "./skills"))
        test_file = Path(args.file) if args.file else None
        return run_skill_test(Path(args.dir), test_file, args.keep, installed)
    except SkillTestError as exc:
        print(f"skill-runner test: {exc}", file=sys.stderr)
        return 2


def serve(args) -> int:
    """Migrate, then serve API, worker and the sweep: in one process (the default) or as the
    production layout's processes; the embedded broker when none is configured."""
    from launcher.demo_llm import DemoLLM, DemoRefused
    from launcher.embedded_broker import EmbeddedBroker

    settings = load_settings()
    make_data_dir(settings)  # before the migration's child, which would print a traceback
    own_script = Path(args.demo_llm_script).resolve() if args.demo_llm_script else None
    demo = DemoLLM(settings.data_dir, own_script) if args.demo_llm or own_script else None
    broker = EmbeddedBroker(settings.broker_socket) if settings.embedded_broker else None
    banner = serve_banner(settings, broker is not None)
    try:
        if demo is not None and own_script is None:
            demo.refuse_when_keyed()
        migration = start_migration(args)
        if args.layout == "processes":
            from launcher.processes_layout import serve_processes

            finish_migration(migration)
            return serve_processes(settings, args.concurrency, broker, demo, banner)
        from launcher.one_process import ServeError, serve_one_process, warm_imports
        from launcher.service_children import ServiceChildren

        warm_imports()  # on the other core while the child migrates
        finish_migration(migration)
        try:
            children = ServiceChildren(broker, demo)
            return serve_one_process(settings, children, args.concurrency, banner)
        except ServeError as exc:  # exit 1, as the processes layout's gunicorn ends then
            print(f"skill-runner: {exc}", file=sys.stderr)
            return 1
    except DemoRefused as exc:
        print(f"skill-runner: {exc}", file=sys.stderr)
        return 2


def serve_banner(settings, embedded_broker: bool) -> str:
    """The line serve prints once it listens; the broker URL's password masked (the line goes
    into the service's log)."""
    from launcher.effective_config import shown

    broker = "embedded" if embedded_broker else shown("broker_url", settings.broker_url)
    return (
        f"Agent Skill Runner on http://{settings.host}:{settings.port} "
        f"(docs: /docs; data: {settings.data_dir}; broker: {broker})"
    )


def _tokens_file(args) -> str:
    path = args.file or os.environ.get("SKILL_RUNNER_TOKENS_FILE", "").strip()
    if not path:
        print("skill-runner: name the file: --file or SKILL_RUNNER_TOKENS_FILE", file=sys.stderr)
    return path


def token_list(args) -> int:
    """The tokens file's entries: name, scopes and the start of the hash (to tell lines of the
    same name apart when rotating)."""
    from runner_core.api_tokens import TokenFileError, list_tokens

    path = _tokens_file(args)
    if not path:
        return 2
    try:
        for name, scopes, digest in list_tokens(Path(path).expanduser()):
            print(f"{name}\t{','.join(scopes)}\tsha256:{digest}...")
    except TokenFileError as exc:
        print(f"skill-runner: {exc}", file=sys.stderr)
        return 2
    except (OSError, UnicodeDecodeError) as exc:
        reason = _reason(exc) if isinstance(exc, OSError) else "not UTF-8 text"
        print(f"skill-runner: cannot read {path}: {reason}", file=sys.stderr)
        return 2
    return 0


def token_add(args) -> int:
    """Append a new token's hash to the tokens file and print the token (once)."""
    from runner_core.api_tokens import TokenFileError, add_token

    path = _tokens_file(args)
    if not path:
        return 2
    try:
        token = add_token(Path(path).expanduser(), args.name, args.scopes.split(","))
    except TokenFileError as exc:
        print(f"skill-runner: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"skill-runner: cannot write {path}: {_reason(exc)}", file=sys.stderr)
        return 2
    print(token)
    print(
        f"token '{args.name}' ({args.scopes}) added to {path}; it is shown only now",
        file=sys.stderr,
    )
    return 0


def _reason(exc: OSError) -> str:
    """The operating system's reason ("No such file or directory"), without errno and path."""
    return exc.strerror or str(exc)


# this package's commands; any other goes to the client package
SERVICE_COMMANDS = (
    "serve",
    "migrate",
    "token",
    "config",
    "validate",
    "new",
    "test",
    "-h",
    "--help",
)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] not in SERVICE_COMMANDS:
        # every other command belongs to the client package (skill_runner_client)
        try:
            from skill_runner_client.cli import main as client_main
        except ModuleNotFoundError as exc:
            if not (exc.name or "").startswith("skill_runner_client"):
                raise
            print(
                f"skill-runner: '{argv[0]}' is a client command; install the client package: "
                "pip install ./client (docs/clients.md)",
                file=sys.stderr,
            )
            return 2
        return client_main(argv, prog="skill-runner")
    parser = argparse.ArgumentParser(
        prog="skill-runner",
        epilog="Client commands (submit, batch, wait, result, status, cancel, logs, bundle, list, "
        "reply, skills, install, engines): skill-runner COMMAND --help; see docs/clients.md.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    config = argparse.ArgumentParser(add_help=False)
    config.add_argument(
        "--config",
        metavar="FILE",
        help=f"a YAML file of settings (as {CONFIG_ENV}; the environment wins)",
    )
    sub.add_parser("migrate", help="apply database migrations", parents=[config]).set_defaults(
        fn=migrate
    )
    sub.add_parser(
        "config", help="print the effective settings (secrets masked)", parents=[config]
    ).set_defaults(fn=show_config)
    p = sub.add_parser("validate", help="check skill directories offline, as an upload would be")
    p.add_argument("dirs", nargs="+", metavar="DIR", help="a skill directory")
    p.add_argument("--json", action="store_true", help="one JSON report per directory")
    p.add_argument(
        "--skills-dir",
        help="the installed skills a skill.json skill's calls are checked against "
        "(default: SKILL_RUNNER_SKILLS_DIR or ./skills)",
    )
    p.set_defaults(fn=validate)
    p = sub.add_parser("new", help="a new skill directory that passes validate")
    p.add_argument("name", help="the skill's name (its directory)")
    p.add_argument("--kind", choices=("prompt", "script", "skill.json"), default="prompt")
    p.add_argument("--dir", default=".", help="where to make it (default: here)")
    p.set_defaults(fn=new)
    p = sub.add_parser("serve", help="run API + worker on the embedded default", parents=[config])
    p.add_argument(
        "--concurrency", type=int, default=int(os.environ.get("WORKER_CONCURRENCY", "2"))
    )
    p.add_argument("--host", help="the address the API listens on (as HOST; default 127.0.0.1)")
    p.add_argument("--port", type=int, help="the API's port (as PORT; default 8000)")
    p.add_argument(
        "--layout",
        choices=("one-process", "processes"),
        default="one-process",
        help="one-process: API, worker and sweep in one process (one machine, a laptop); "
        "processes: gunicorn, a prefork worker and its beat as separate processes",
    )
    p.add_argument(
        "--demo-llm",
        action="store_true",
        help="point the engine CLIs at a scripted fake LLM on loopback (a first look without a "
        "provider account; refused when a provider key is configured)",
    )
    p.add_argument(
        "--demo-llm-script",
        metavar="FILE",
        help="as --demo-llm, the model playing the turns of FILE (fake_llm's script format, "
        "read at every call; what skill-runner test uses)",
    )
    p.set_defaults(fn=serve)
    p = sub.add_parser("test", help="play a skill's test cases through a throw-away service")
    p.add_argument("dir", metavar="DIR", help="the skill directory")
    p.add_argument("--file", help="the test file (default: DIR/tests/skill-test.json)")
    p.add_argument("--keep", action="store_true", help="keep the test service's data folder")
    p.add_argument(
        "--skills-dir",
        help="where the skills a skill.json composite calls are taken from "
        "(default: SKILL_RUNNER_SKILLS_DIR or ./skills)",
    )
    p.set_defaults(fn=skill_test)
    tokens = sub.add_parser("token", help="manage the API tokens file").add_subparsers(
        dest="token_command", required=True
    )
    p = tokens.add_parser("add", help="make a token: prints it once, appends its hash")
    p.add_argument("name", help="the token's name (owns its runs; shown in logs and the audit)")
    p.add_argument("--scopes", default="read,submit", help="read, submit, admin (comma-separated)")
    p.add_argument("--file", help="the tokens file (default: SKILL_RUNNER_TOKENS_FILE)")
    p.set_defaults(fn=token_add)
    p = tokens.add_parser("list", help="the tokens file's names, scopes and hash prefixes")
    p.add_argument("--file", help="the tokens file (default: SKILL_RUNNER_TOKENS_FILE)")
    p.set_defaults(fn=token_list)
    args = parser.parse_args(argv)
    if getattr(args, "config", None):  # for this process and every one it starts
        os.environ[CONFIG_ENV] = str(Path(args.config).expanduser().resolve())
    for name in ("host", "port"):  # a flag wins over the environment, for the children too
        if getattr(args, name, None) is not None:
            os.environ[name.upper()] = str(getattr(args, name))
    try:
        return args.fn(args)
    except SettingsError as exc:
        print(f"skill-runner: configuration error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
