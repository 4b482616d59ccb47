#!/usr/bin/env python3
"""Runs the host's test binaries one at a time and prints each one's wall time.

`cargo test` runs the same binaries but says nothing of where the time goes,
and stops at the first failing binary. This builds them once
(`cargo test --no-run`, the packages given after `--`), runs each as cargo
would (from its package's directory, with cargo's environment), then every
doc test, and prints a table of wall times, slowest first. Every binary
runs even when one fails; the exit status is 1 if any failed.

Tiers: `--only NAMES` runs just those test binaries (by target name, e.g.
`faults`), `--skip NAMES` all but those; NAMES is comma-separated. The
Makefile's `test` skips the kill, soak and rolling-restart tier that
`test-faults` runs; `.ci/run` runs both.

Arguments after the test binaries' own `--` (e.g. `-- --test-threads 1`)
are not taken: each binary runs with cargo's defaults.
"""

import argparse
import json
import os
import subprocess
import sys
import time


def build(cargo_args):
    """Builds the test binaries; returns (name, kind, package dir, path)."""
    cmd = ["cargo", "test", "--no-run", "--message-format=json-render-diagnostics"]
    proc = subprocess.run(cmd + cargo_args, stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        sys.exit(proc.returncode)
    binaries = []
    for line in proc.stdout.splitlines():
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            continue
        if msg.get("reason") != "compiler-artifact" or not msg.get("executable"):
            continue
        if not msg.get("profile", {}).get("test"):
            continue
        target = msg["target"]
        kind = target["kind"][0]
        name = target["name"]
        label = name if kind == "test" else f"{name} ({kind})"
        package_dir = os.path.dirname(msg["manifest_path"])
        binaries.append((name, label, package_dir, msg["executable"], msg["package_id"]))
    return binaries


def toolchain_env():
    """What rustup's proxy gives a process `cargo test` starts: the
    toolchain rust-toolchain.toml pins, so a test that runs cargo itself
    (scaffolding a project, building for wasm32-wasip2) gets it too."""
    env = dict(os.environ)
    if "RUSTUP_TOOLCHAIN" not in env:
        out = subprocess.run(["rustup", "show", "active-toolchain"], stdout=subprocess.PIPE, text=True)
        if out.returncode == 0 and out.stdout.split():
            env["RUSTUP_TOOLCHAIN"] = out.stdout.split()[0]
    return env


BASE_ENV = None


def package_env(package_dir, package_id):
    """The variables cargo sets for a test process of this package."""
    global BASE_ENV
    if BASE_ENV is None:
        BASE_ENV = toolchain_env()
    env = dict(BASE_ENV)
    env["CARGO_MANIFEST_DIR"] = package_dir
    # package_id is `path+file:///dir#name@version` (or `...#version`).
    tail = package_id.rsplit("#", 1)[-1]
    name, _, version = tail.rpartition("@")
    env["CARGO_PKG_NAME"] = name or os.path.basename(package_dir)
    env["CARGO_PKG_VERSION"] = version
    return env


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help="comma-separated test binaries to run")
    parser.add_argument("--skip", default="", help="comma-separated test binaries to leave out")
    parser.add_argument("--no-doc", action="store_true", help="do not run doc tests")
    parser.add_argument("cargo_args", nargs=argparse.REMAINDER, help="-- then cargo test's package selection")
    args = parser.parse_args()
    cargo_args = [a for a in args.cargo_args if a != "--"]
    only = {n for n in args.only.split(",") if n}
    skip = {n for n in args.skip.split(",") if n}

    started = time.monotonic()
    binaries = build(cargo_args)
    if only:
        unknown = only - {b[0] for b in binaries}
        if unknown:
            sys.exit(f"--only: no test binary named {', '.join(sorted(unknown))}")
        binaries = [b for b in binaries if b[0] in only]
    binaries = [b for b in binaries if b[0] not in skip]

    results = []
    for name, label, package_dir, path, package_id in binaries:
        print(f"\n=== {label} ({os.path.relpath(path)})", flush=True)
        t0 = time.monotonic()
        code = subprocess.run([path], cwd=package_dir, env=package_env(package_dir, package_id)).returncode
        results.append((label, time.monotonic() - t0, code))
        print(f"=== {label}: {'ok' if code == 0 else f'FAILED (exit {code})'} in {results[-1][1]:.1f} s", flush=True)

    if not args.no_doc and not only:
        t0 = time.monotonic()
        code = subprocess.run(["cargo", "test", "--doc"] + cargo_args).returncode
        results.append(("doc tests", time.monotonic() - t0, code))

    total = time.monotonic() - started
    print("\nTest binaries by wall time (s):")
    for label, seconds, code in sorted(results, key=lambda r: -r[1]):
        print(f"  {seconds:8.1f}  {label}{'' if code == 0 else '  FAILED'}")
    print(f"  {total:8.1f}  in all, build included")
    failed = [r[0] for r in results if r[2] != 0]
    if failed:
        print(f"\nFailed: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
