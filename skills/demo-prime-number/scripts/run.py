"""demo-prime-number: primes up to (first integer in input_file) // divisor."""
import json
import os
import re
import sys
from pathlib import Path


def primes_up_to(bound: int) -> list[int]:
    if bound < 2:
        return []
    sieve = bytearray([1]) * (bound + 1)
    sieve[0:2] = b"\x00\x00"
    for i in range(2, int(bound ** 0.5) + 1):
        if sieve[i]:
            sieve[i * i::i] = bytearray(len(sieve[i * i::i]))
    return [i for i, is_prime in enumerate(sieve) if is_prime]


def main() -> int:
    ctx = json.loads(Path(os.environ["SKILL_RUNNER_INPUT_FILE"]).read_text())
    text = Path(ctx["input"]["input_file"]).read_text(encoding="utf-8", errors="replace")
    match = re.search(r"-?\d+", text)
    if not match:
        print("input_file holds no integer", file=sys.stderr)
        return 2
    bound = int(match.group()) // ctx["parameter"]["divisor"]
    primes = primes_up_to(bound)
    print(f"[INFO] bound={bound} primes={len(primes)}")
    artifacts = Path(os.environ["SKILL_RUNNER_ARTIFACTS_DIR"])
    (artifacts / "primes.md").write_text(
        f"# Primes up to {bound}\n\n{', '.join(map(str, primes)) or '(none)'}\n", encoding="utf-8")
    result = {"primes": primes, "count": len(primes), "bound": bound, "report": "artifacts/primes.md"}
    Path(os.environ["SKILL_RUNNER_RESULT_FILE"]).write_text(json.dumps(result), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
