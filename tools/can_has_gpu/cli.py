"""can-has-gpu: reserve an emulated GPU of the DRA lab, use it, see why you wait, give it back.

Runs as your seat with your own kubeconfig (~/.kube/config) and only in your
namespace. Every refusal is one sentence with what to do and a non-zero exit
status:
  1  refused (quota, policy, an unknown class, a lease too long)
  2  bad usage
  3  no GPU can be allocated now: the GPUs that fit are in use (the sentence
     names who holds them and when the first lease ends), or blocked (ask the
     instructor); nothing is held for you, reserve again later
  4  the API cannot be reached or refuses your credentials
  5  the request never fits the lab as asked (no GPU is that large, no class
     of that name, ...; or a pod of yours waits for a claim that does not
     exist, or fits no node for its own cpu, memory or affinity): waiting
     does not help, change the request or the pod as the sentence says
reserve refuses a request that never fits at once, before it makes anything;
without a free GPU it waits in line, first come first served, and says its
position and the lease end it waits for (Ctrl-C or `leave` gives the place up;
--no-wait answers at once instead, exit 3);
why exits 0 when the claim has (or can get) its GPU, else 3 or 5 as above.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time

from . import __version__, render, service
from .api import CHANGE_VERDICTS, EXIT_NEVER_FITS, EXIT_NO_GPU, EXIT_REFUSED, EXIT_USAGE, Refusal
from .settings import SettingsError, load_settings

EXAMPLES = """\
examples:
  can-has-gpu reserve                      a GPU of the default class for the default lease
  can-has-gpu reserve --memory 40Gi --for 1h
  can-has-gpu reserve --share 20Gi         a share of one GPU (on a lab with shared GPUs)
  can-has-gpu run -- busybox:1.37 sh -c 'env | grep ^GPU_DEVICE_'
  can-has-gpu status                       your claims, their GPUs and leases; the lab's free GPUs
  can-has-gpu why                          why your newest claim has no GPU (or which one it has)
  can-has-gpu release --all                pods first, then the claims
  can-has-gpu leave                        give up your place in the GPU waitlist
  can-has-gpu status --output json         every command speaks JSON too

exit status: 0 done, 1 refused, 2 bad usage, 3 no GPU now (wait: the sentence says for whom and how long),
4 the API unreachable or refusing you, 5 never fits as asked (change the request or the pod: the sentence says how)
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        self.print_usage(sys.stderr)
        raise Refusal(f"{message} (can-has-gpu --help shows examples).", code=EXIT_USAGE, reason="usage")


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--output", "-o", choices=("text", "json"), default=argparse.SUPPRESS,
                        help="text (default) or json")
    common.add_argument("--kubeconfig", default=argparse.SUPPRESS,
                        help="kubeconfig to use (default: $KUBECONFIG or ~/.kube/config, your seat's)")
    parser = _Parser(prog="can-has-gpu", description=__doc__.split("\n\n", maxsplit=1)[0], epilog=EXAMPLES,
                     formatter_class=argparse.RawDescriptionHelpFormatter, parents=[common])
    parser.add_argument("--version", action="version", version=f"can-has-gpu {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    p = sub.add_parser("reserve", parents=[common], help="reserve GPU(s) now, for a lease",
                       description="Make a claim and a small holder pod so a GPU is allocated now; wait (bounded) "
                                   "until it is, then print which GPU on which node. When none can be allocated, "
                                   "say why instead of waiting forever, and take the claim back.",
                       epilog="example: can-has-gpu reserve --class gpu-40gi.example.com --for 1h",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--class", dest="device_class", help="GPU class (DeviceClass); default: the lab's default")
    p.add_argument("--memory", help="at least this much GPU memory, e.g. 40Gi")
    p.add_argument("--count", type=int, default=1, help="number of GPUs (default 1)")
    p.add_argument("--share", metavar="MEMORY",
                   help="a share of one GPU: this much of its memory (and as much of its compute), e.g. 20Gi; "
                        "needs the lab's shared GPUs (class gpu-shared.example.com)")
    p.add_argument("--for", dest="lease", metavar="DURATION", help="lease, e.g. 30m, 2h (default and maximum: the lab's settings)")
    p.add_argument("--wait", metavar="DURATION",
                   help="give up after this long (default: in line until a GPU is yours; with --no-wait the lab's "
                        "setting)")
    p.add_argument("--no-wait", action="store_true",
                   help="no waitlist: if no GPU is free now, say so and exit 3 (nothing is held for you)")

    p = sub.add_parser("run", parents=[common], help="run a container on your reserved GPU, logs streamed",
                       description="Start a pod that shares your reserved claim and stream its log; the exit "
                                   "status is the container's.",
                       epilog="example: can-has-gpu run -- busybox:1.37 sh -c 'env | grep ^GPU_DEVICE_'",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--claim", help="which claim (default: your only allocated one)")
    p.add_argument("--rm", action="store_true", help="delete the pod when it has finished")
    p.add_argument("image", metavar="IMAGE")
    p.add_argument("cmd", metavar="CMD", nargs=argparse.REMAINDER)

    sub.add_parser("status", parents=[common], help="your claims (state, GPU, node, age, lease left) and free GPUs",
                   epilog="example: can-has-gpu status -o json")
    p = sub.add_parser("why", parents=[common], help="why a claim of yours has no GPU (default: the newest)",
                       epilog="example: can-has-gpu why gpu-x7k2p")
    p.add_argument("claim", nargs="?")
    p = sub.add_parser("release", parents=[common], help="give GPU(s) back: the pods, then the claim",
                       epilog="examples: can-has-gpu release gpu-x7k2p; can-has-gpu release --all")
    p.add_argument("claim", nargs="?")
    p.add_argument("--all", action="store_true", help="every claim of yours")
    sub.add_parser("leave", parents=[common], help="give up your place(s) in the GPU waitlist",
                   description="Leave the GPU waitlist: your places in line are given up (Ctrl-C in a waiting "
                               "reserve does the same).")
    return parser


class Out:
    """Progress on stderr (text mode only); results on stdout as text or JSON."""

    def __init__(self, fmt: str):
        self.json = fmt == "json"
        self.tty = sys.stderr.isatty()
        self._line = False
        self._last = -100.0

    def progress(self, text: str) -> None:
        if self.json:
            return
        if not self.tty:  # a log, not a terminal: one line every 10 seconds is enough
            if time.monotonic() - self._last < 10:
                return
            self._last = time.monotonic()
        if self.tty:
            sys.stderr.write("\r\033[K" + text)
            self._line = True
        else:
            sys.stderr.write(text + "\n")
        sys.stderr.flush()

    def end_progress(self) -> None:
        if self._line:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()
            self._line = False

    def result(self, data: dict, text: str) -> None:
        self.end_progress()
        print(json.dumps(data, indent=2, sort_keys=True) if self.json else text, flush=True)


# --- commands: the service does the work, the result is rendered here --------------------------

def cmd_reserve(args, settings, out) -> int:
    request = service.reserve_request(settings, args.device_class, args.count, args.memory, args.lease, args.wait,
                                      in_line=not args.no_wait, share=args.share)
    result = service.reserve(args.kubeconfig, request, settings, out)
    if result["allocated"]:
        out.result(result, render.reserved_text(result))
        return 0
    out.result(result, render.no_gpu_text(result))
    return no_gpu_exit(result.get("verdict"))


def cmd_status(args, settings, out) -> int:
    report = service.status(args.kubeconfig, settings)
    out.result(report, render.status_text(report))
    return 0


def cmd_why(args, settings, out) -> int:
    answer = service.why(args.kubeconfig, settings, args.claim)
    out.result(answer, render.why_text(answer))
    return why_exit(answer, named=bool(args.claim))


def why_exit(answer: dict, named: bool) -> int:
    """The claim's exit; asked about no claim in particular, where the claim would exit 0, a pod of the seat that
    waits for good (its claim missing, refused, or on a node the pod cannot go to) decides instead."""
    code, waiting = verdict_exit(answer), answer.get("pods_waiting") or []
    if code == 0 and waiting and not named:
        return verdict_exit(waiting[0])
    return code


def verdict_exit(answer: dict) -> int:
    """0 when the claim has its GPU, or fits and the scheduler tries it (no gate, its scheduler runs, its pod fits
    some node); else 5 when only a change mends it, 3 when waiting does."""
    verdict = answer.get("verdict")
    if verdict == "allocated" or (answer.get("allocatable") and verdict not in (
            "gated", "other_scheduler", "pod_unschedulable")):
        return 0
    return no_gpu_exit(verdict)


def no_gpu_exit(verdict: str | None) -> int:
    """5 when only a changed request or pod mends it, else 3 (waiting does)."""
    return EXIT_NEVER_FITS if verdict in CHANGE_VERDICTS else EXIT_NO_GPU


def cmd_release(args, settings, out) -> int:
    result = service.release(args.kubeconfig, settings, args.claim, args.all, out)
    out.result(result, render.released_text(result))
    return 0


def cmd_run(args, settings, out) -> int:
    command = args.cmd[1:] if args.cmd and args.cmd[0] == "--" else args.cmd

    def show_log(text: str) -> None:
        if not out.json:
            sys.stdout.write(text)
            sys.stdout.flush()
    result = service.run(args.kubeconfig, settings, args.claim, args.image, command, args.rm, out, show_log)
    if out.json:
        out.result(result, "")
    else:
        sys.stderr.write(render.run_ended_text(result))
    exit_code = result["exit_code"]
    return exit_code if isinstance(exit_code, int) and exit_code < 256 else (0 if exit_code == 0 else 1)


def cmd_leave(args, settings, out) -> int:  # pylint: disable=unused-argument
    result = service.leave(args.kubeconfig)
    out.result(result, render.left_text(result))
    return 0


COMMANDS = {"reserve": cmd_reserve, "run": cmd_run, "status": cmd_status, "why": cmd_why, "release": cmd_release,
            "leave": cmd_leave}


def _wants_json(args_list: list[str]) -> bool:
    """Whether the command line asks for JSON, read before parsing so that a usage error is JSON too."""
    for i, arg in enumerate(args_list):
        if arg in ("-o=json", "--output=json", "-ojson"):
            return True
        if arg in ("-o", "--output") and args_list[i + 1:i + 2] == ["json"]:
            return True
    return False


def _fail(out: Out, reason: str, sentence: str, code: int) -> int:
    """Every failure the same way: {"error": reason, "sentence": ...} on stdout with -o json, else one line on stderr."""
    out.end_progress()
    if out.json:
        print(json.dumps({"error": reason, "sentence": sentence}, indent=2), flush=True)
    else:
        print(f"can-has-gpu: {sentence}", file=sys.stderr)
    return code


def _interrupt(*_args) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    out = Out("json" if _wants_json(args_list) else "text")
    try:
        args = build_parser().parse_args(args_list)
        args.output = getattr(args, "output", "text")
        args.kubeconfig = getattr(args, "kubeconfig", None)
        out = Out(args.output)
        settings = load_settings()
        for number in (signal.SIGHUP, signal.SIGTERM):  # a closed session leaves the line as Ctrl-C does
            signal.signal(number, _interrupt)
        return COMMANDS[args.command](args, settings, out)
    except Refusal as exc:
        return _fail(out, exc.reason, exc.sentence, exc.code)
    except SettingsError as exc:
        return _fail(out, "settings", f"{exc}: tell the instructor.", EXIT_REFUSED)
    except Exception as exc:  # pylint: disable=broad-exception-caught
        if os.environ.get("CAN_HAS_GPU_DEBUG"):
            raise
        return _fail(out, "unexpected", f"unexpected error ({type(exc).__name__}: {exc}): tell the instructor; "
                                        "CAN_HAS_GPU_DEBUG=1 shows the details.", EXIT_REFUSED)
    except KeyboardInterrupt:
        return _fail(out, "interrupted", "interrupted (a place in line is given up; a claim made by reserve stays "
                                         "until released or its lease ends: can-has-gpu status).", 130)


if __name__ == "__main__":
    sys.exit(main())
