"""Build a Python handler into an Airlock component with componentize-py.

    python -m airlock_sdk.build APP_DIR -o handler.wasm [--module app] [--batch]
    python -m airlock_sdk.build --bindings DIR [--batch]   # bindings for IDEs/type checkers

Runs the componentize-py of the current interpreter's environment (pinned
in ``guest-sdk/python/requirements.txt``; a different version is refused)
against the contract ``wit/airlock.wit`` (``$AIRLOCK_WIT`` overrides where
it is) and the SDK's world ``airlock:python-sdk/handler`` of
``guest-sdk/python/wit/world.wit`` — or, with ``--batch`` (an app whose
handler is a ``@batch_handler``), its world ``batch-handler``, which also
exports ``run-batch``. The component is rebuilt only when an input
changed: a SHA-256 of the app's files, the SDK, the WIT, the world and the
tool's version is kept next to the output (``handler.wasm.stamp``).

Standard library only. Run it as a module (``PYTHONPATH=guest-sdk/python/src
python -m airlock_sdk.build`` from a checkout, or from a venv with the SDK
installed); it is not part of a built component (nothing imports it).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterable, List, Optional

WORLD = "airlock:python-sdk/handler@0.6.0"
# The world of an app whose handler is a `@batch_handler` (`--batch`).
BATCH_WORLD = "airlock:python-sdk/batch-handler@0.6.0"
# Both `airlock:job/types` and `wasi:http/types` are called `types`: pin the
# module names the SDK's `_bindings` imports.
INTERFACE_NAMES = [
    "airlock:job/types@0.6.0=airlock_types",
    "wasi:http/types@0.2.12=http_types",
]
SKIP_DIRS = {"__pycache__", ".venv", "venv", ".git", "node_modules", ".mypy_cache", ".pytest_cache"}
SKIP_SUFFIXES = (".wasm", ".stamp", ".pyc")

SDK_ROOT = Path(__file__).resolve().parents[2]


class BuildError(Exception):
    pass


def _files(root: Path) -> Iterable[Path]:
    if root.is_file():
        yield root
        return
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for name in sorted(filenames):
            if not name.endswith(SKIP_SUFFIXES):
                yield Path(dirpath) / name


def pinned_version() -> str:
    requirements = SDK_ROOT / "requirements.txt"
    match = re.search(r"^componentize-py==(\S+)", requirements.read_text(), re.M)
    if not match:
        raise BuildError(f"{requirements} does not pin componentize-py==<version>")
    return match.group(1)


def tool() -> List[str]:
    """The componentize-py command of this environment, at the pinned version."""
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # pragma: no cover
        raise BuildError("Python 3.8+ is needed to build")
    want = pinned_version()
    try:
        have = version("componentize-py")
    except PackageNotFoundError:
        raise BuildError(
            f"componentize-py is not installed for {sys.executable}: "
            f"pip install -r {SDK_ROOT / 'requirements.txt'}"
        ) from None
    if have != want:
        raise BuildError(
            f"componentize-py {have} is installed for {sys.executable}, the SDK pins {want}: "
            f"pip install -r {SDK_ROOT / 'requirements.txt'}"
        )
    script = Path(sys.executable).parent / "componentize-py"
    if script.exists():
        return [str(script)]
    found = shutil.which("componentize-py")
    if found is None:
        raise BuildError("the componentize-py command is not on PATH")
    return [found]


def contract_wit() -> Path:
    configured = os.environ.get("AIRLOCK_WIT")
    path = Path(configured) if configured else SDK_ROOT.parent.parent / "wit" / "airlock.wit"
    if not path.is_file():
        raise BuildError(
            f"the Airlock contract {path} is missing: set AIRLOCK_WIT to the path of wit/airlock.wit"
        )
    return path


def world(batch: bool = False) -> str:
    """The SDK world to build against: ``batch-handler`` or ``handler``."""
    return BATCH_WORLD if batch else WORLD


def wit_args(batch: bool = False) -> List[str]:
    args = ["-d", str(contract_wit()), "-d", str(SDK_ROOT / "wit"), "-w", world(batch)]
    for name in INTERFACE_NAMES:
        args += ["--import-interface-name", name]
    return args


def _env() -> dict:
    # componentize-py searches $VIRTUAL_ENV's site-packages and the running
    # interpreter's; PYTHONPATH (set to run this module from a checkout)
    # must not leak into what the component can import.
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    return env


def digest(app_dir: Path, module: str, command: List[str]) -> str:
    """The stamp of a build: the tool's version, the module, the command's
    arguments (among them ``-w`` and the world) and every input file."""
    h = hashlib.sha256()
    h.update(f"componentize-py=={pinned_version()}\0{module}\0".encode())
    h.update("\0".join(command[1:]).encode())
    roots = [app_dir, SDK_ROOT / "src", SDK_ROOT / "wit", SDK_ROOT / "requirements.txt", contract_wit()]
    for root in roots:
        for path in _files(root):
            h.update(b"\0file\0" + str(path.relative_to(root) if path != root else path.name).encode())
            h.update(b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def build(
    app_dir: Path,
    output: Path,
    module: str = "app",
    force: bool = False,
    quiet: bool = False,
    batch: bool = False,
) -> bool:
    """Builds ``app_dir``'s ``module`` into ``output``; ``False`` when it was
    already up to date. ``batch``: against the ``batch-handler`` world (the
    app's handler is a ``@batch_handler``)."""
    if not (app_dir / f"{module}.py").is_file() and not (app_dir / module / "__init__.py").is_file():
        raise BuildError(f"no module `{module}` in {app_dir}")
    command = tool() + wit_args(batch) + [
        "componentize",
        "-p",
        str(app_dir),
        "-p",
        str(SDK_ROOT / "src"),
        module,
        "-o",
        str(output),
    ]
    stamp = output.with_name(output.name + ".stamp")
    want = digest(app_dir, module, command)
    if not force and output.is_file() and stamp.is_file() and stamp.read_text().strip() == want:
        if not quiet:
            size = output.stat().st_size
            print(f"{output}: up to date ({size / (1 << 20):.1f} MiB)")
        return False
    output.parent.mkdir(parents=True, exist_ok=True)
    stamp.unlink(missing_ok=True)
    started = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, env=_env())
    elapsed = time.monotonic() - started
    if result.returncode != 0:
        sys.stderr.write(result.stdout)
        sys.stderr.write(result.stderr)
        raise BuildError(f"componentize-py failed for {app_dir} (exit {result.returncode})")
    stamp.write_text(want + "\n")
    if not quiet:
        size = output.stat().st_size
        print(f"{output}: built in {elapsed:.1f}s, {size} bytes ({size / (1 << 20):.1f} MiB)")
    return True


def bindings(out_dir: Path, batch: bool = False) -> None:
    """Writes the Python bindings of the SDK's world (``wit_world``; with
    ``batch``, of the ``batch-handler`` world) to ``out_dir``, for editors
    and type checkers; builds do not need them."""
    command = tool() + wit_args(batch) + ["bindings", str(out_dir)]
    result = subprocess.run(command, capture_output=True, text=True, env=_env())
    if result.returncode != 0:
        sys.stderr.write(result.stderr)
        raise BuildError("componentize-py bindings failed")
    print(f"bindings written to {out_dir}")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m airlock_sdk.build",
        description="Build a Python Airlock handler into a WebAssembly component.",
    )
    parser.add_argument("app_dir", nargs="?", type=Path, help="the directory holding the app module")
    parser.add_argument("-o", "--output", type=Path, help="the component to write (.wasm)")
    parser.add_argument("-m", "--module", default="app", help="the app module (default: app)")
    parser.add_argument("--force", action="store_true", help="rebuild even when up to date")
    parser.add_argument("-q", "--quiet", action="store_true", help="print nothing on success")
    parser.add_argument(
        "--batch",
        action="store_true",
        help=f"build for the batch-handler world ({BATCH_WORLD}: run and run-batch) "
        "of an app whose handler is a @batch_handler",
    )
    parser.add_argument("--bindings", type=Path, metavar="DIR", help="write the bindings to DIR instead")
    args = parser.parse_args(argv)
    try:
        if args.bindings is not None:
            bindings(args.bindings, args.batch)
            return 0
        if args.app_dir is None or args.output is None:
            parser.error("give APP_DIR and -o OUTPUT (or --bindings DIR)")
        build(args.app_dir.resolve(), args.output.resolve(), args.module, args.force, args.quiet, args.batch)
        return 0
    except BuildError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
