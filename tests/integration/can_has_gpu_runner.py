"""Run the real can-has-gpu and dralab-lease-reaper, installed from their wheel, as a seat would.

`Tool` builds the wheel (dralab_build/wheels.py), installs it with its entry
points into a folder, and runs `can-has-gpu` in a subprocess with HOME set to
a home of the seat whose ~/.kube/config is the seat's kubeconfig from the
`workshop` fixture (and nothing else: no KUBECONFIG, no admin credentials).
`Reaper` runs `dralab-lease-reaper` with the kubeconfig of its own
ServiceAccount, which the participant_tool role wrote into the artifacts;
`Service` runs any of the wheel's services (test_board.py runs `dralab-board`).
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from dralab_build import wheels  # noqa: E402  (dralab_build/wheels.py)
from k8s_helpers import clear_namespaces  # noqa: E402


@dataclass
class Result:
    argv: list[str]
    rc: int
    stdout: str
    stderr: str
    seat: str

    def json(self) -> dict:
        return json.loads(self.stdout)

    def transcript(self) -> str:
        """What the seat saw in its terminal (stdout, then stderr without progress lines)."""
        err = "\n".join(line for line in self.stderr.splitlines() if not line.startswith(("Waiting", "Claim ", "Releasing")))
        shown = (self.stdout + ("\n" + err if err.strip() else "")).rstrip()
        return f"{self.seat}$ {shlex.join(self.argv)}\n{shown}\n[exit {self.rc}]\n"

    def describe(self) -> str:
        return f"{shlex.join(self.argv)} as {self.seat} -> rc {self.rc}\nstdout:\n{self.stdout}\nstderr:\n{self.stderr}"


class Tool:
    def __init__(self, workdir: Path, lab, settings: dict):
        self.dir = workdir
        self.lab = lab
        self.target = workdir / "site"
        wheel = wheels.build_tool_wheel(workdir / "wheel")
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target",
                        str(self.target), str(wheel)], check=True)
        self.settings = workdir / "can-has-gpu.json"
        self.settings.write_text(json.dumps(settings))
        self.transcripts: list[str] = []

    def bin(self, name: str) -> Path:
        return self.target / "bin" / name

    def env(self, home: Path | None = None) -> dict:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("K8S_AUTH_", "KUBECONFIG", "PYTHON"))}
        env.update(PYTHONPATH=str(self.target), CAN_HAS_GPU_SETTINGS=str(self.settings), LC_ALL="C.UTF-8")
        if home is not None:
            env["HOME"] = str(home)
        return env

    def home(self, seat: str) -> Path:
        home = self.dir / "home" / seat
        kube = home / ".kube" / "config"
        if not kube.exists():
            kube.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(self.lab.seat_kubeconfig(seat), kube)
            kube.chmod(0o600)
        return home

    def run(self, seat: str, *args: str, timeout: float = 240) -> Result:
        argv = ["can-has-gpu", *args]
        proc = subprocess.run([str(self.bin("can-has-gpu")), *args], env=self.env(self.home(seat)),
                              cwd=self.home(seat), capture_output=True, text=True, timeout=timeout, check=False)
        return Result(argv, proc.returncode, proc.stdout, proc.stderr, seat)

    def show(self, result: Result) -> Result:
        """Run result kept for the transcript (printed by the test, saved by the fixture)."""
        self.transcripts.append(result.transcript())
        return result


@contextlib.contextmanager
def seat_tool(api, workshop, workdir: Path, seats: list[str], settings: dict, transcript: str):
    """A module's Tool on cleared seat namespaces; afterwards its transcript saved (workshop.logs/transcript) and
    printed, and the namespaces cleared again."""
    clear_namespaces(api, seats)
    tool = Tool(workdir, workshop, settings)
    try:
        yield tool
    finally:
        out = workshop.logs / transcript
        out.write_text("\n".join(tool.transcripts))
        print(f"\n[{out.stem}] ({out}):\n" + "\n".join(tool.transcripts), file=sys.stderr)
        clear_namespaces(api, seats)


class Service:
    """One of the wheel's services (the reaper, the board) running as a subprocess, its output in a log file."""

    def __init__(self, tool: Tool, command: str, kubeconfig: Path, *args: str, env: dict | None = None):
        self.log_path = tool.dir / f"{command}-{int(time.time() * 1000)}.log"
        self.log = self.log_path.open("w")
        self.proc = subprocess.Popen([str(tool.bin(command)), "--kubeconfig", str(kubeconfig), *args],
                                     env=dict(tool.env(), **(env or {})), stdout=self.log, stderr=subprocess.STDOUT)

    def text(self) -> str:
        if not self.log.closed:
            self.log.flush()
        return self.log_path.read_text()

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode


class Reaper(Service):
    def __init__(self, tool: Tool, kubeconfig: Path, *args: str):
        super().__init__(tool, "dralab-lease-reaper", kubeconfig, *args)

    def passes(self) -> int:
        return self.text().count("\n")
