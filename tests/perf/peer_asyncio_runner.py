#!/usr/bin/env python3
"""The benchmark's Python peer: the seeds' story S3-03 rubric runner, stdlib only.

    peer_asyncio_runner.py MANIFEST RUBRIC_ROOT [--jobs N] [--repeat K]

Follows seeds/001 (S3-03) exactly: SCRUBBED_ENV is the four-key MappingProxyType; each
case runs `asyncio.create_subprocess_exec(sys.executable, rubric_path, env=SCRUBBED_ENV,
cwd=TemporaryDirectory(), stdin/stdout/stderr=PIPE)`, `wait_for(proc.communicate(payload),
timeout)`, kill + wait on timeout, non-zero exit -> rubric.malformed_output with
stderr[:200], validation of the BenchScore, wall_clock_ms measured by the runner. The
fan-out is S3-02's: one asyncio loop, a semaphore of N. Pydantic is not in the standard
library, so BenchScore.model_validate_json is replaced by json.loads and the same strict
key/type checks. MANIFEST is the JSON list written by
tests/fixtures/rubrics/mkbench.py --manifest. Prints one line: cases, passed, seconds.
"""
import argparse
import asyncio
import json
import math
import sys
import tempfile
import time
import types
from pathlib import Path

SCRUBBED_ENV = types.MappingProxyType({
    "PATH": "/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "PYTHONHASHSEED": "0",
    "PYTHONIOENCODING": "utf-8",
})

SCORE_KEYS = {"passed", "score", "breakdown", "failure_modes", "cost_usd", "wall_clock_ms"}


class ValidationError(ValueError):
    pass


def failure(code, wall_clock_ms, detail=None):
    fm = {"code": code, "severity": "block"}
    if detail is not None:
        fm["detail"] = detail
    return {"passed": False, "score": 0.0, "breakdown": {}, "failure_modes": [fm],
            "cost_usd": 0.0, "wall_clock_ms": wall_clock_ms}


def validate_json(raw):
    """Stand-in for BenchScore.model_validate_json: strict keys and types."""
    try:
        obj = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValidationError(str(e))
    if not isinstance(obj, dict) or set(obj) != SCORE_KEYS:
        raise ValidationError("keys")
    if not isinstance(obj["passed"], bool):
        raise ValidationError("passed")
    s = obj["score"]
    if isinstance(s, bool) or not isinstance(s, (int, float)) or not math.isfinite(s) or not 0 <= s <= 1:
        raise ValidationError("score")
    if not isinstance(obj["breakdown"], dict) or not isinstance(obj["failure_modes"], list):
        raise ValidationError("breakdown/failure_modes")
    return obj


class SubprocessRubricRunner:
    def __init__(self, rubric_root, timeout_default=60.0):
        self.rubric_root = Path(rubric_root)
        self.timeout_default = timeout_default

    async def __call__(self, case, harness_output):
        rubric_path = self.rubric_root / case["task_class"] / "rubric.py"
        stdin_payload = json.dumps({"case": case["case"],
                                    "harness_output": harness_output}).encode("utf-8")
        timeout = case.get("rubric_wall_clock_seconds") or self.timeout_default
        start_ns = time.monotonic_ns()
        with tempfile.TemporaryDirectory() as tmpdir:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, str(rubric_path), env=dict(SCRUBBED_ENV), cwd=tmpdir,
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE)
            try:
                stdout, stderr = await asyncio.wait_for(proc.communicate(input=stdin_payload),
                                                        timeout=timeout)
            except asyncio.TimeoutError:
                proc.kill()
                await proc.wait()
                return failure("rubric.timeout",
                               (time.monotonic_ns() - start_ns) // 1_000_000)
        wall_clock_ms = (time.monotonic_ns() - start_ns) // 1_000_000
        if proc.returncode != 0:
            return failure("rubric.malformed_output", wall_clock_ms,
                           stderr[:200].decode("utf-8", "replace"))
        try:
            score = validate_json(stdout)
        except ValidationError as e:
            return failure("rubric.malformed_output", wall_clock_ms, str(e)[:200])
        score["wall_clock_ms"] = wall_clock_ms
        return score


async def run_eval(cases, runner, jobs):
    sem = asyncio.Semaphore(jobs)

    async def one(case):
        async with sem:
            return await runner(case, case["harness_output"])

    return await asyncio.gather(*(one(c) for c in cases))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("manifest")
    ap.add_argument("rubric_root")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--task-class", default="trivial")
    a = ap.parse_args()
    cases = [c for c in json.load(open(a.manifest)) if c["task_class"] == a.task_class]
    t0 = time.monotonic()
    scores = asyncio.run(run_eval(cases, SubprocessRubricRunner(a.rubric_root), a.jobs))
    dt = time.monotonic() - t0
    print("cases %d passed %d seconds %.3f" % (len(scores), sum(s["passed"] for s in scores), dt))


if __name__ == "__main__":
    main()
