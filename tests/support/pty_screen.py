#!/usr/bin/python3
"""Runs a command under a real pseudo-terminal and renders its output with a real terminal
emulator (pyte, Debian's python3-pyte), then plays steps against the rendered screen, as a
person at the terminal would: the end-to-end tests read what is shown, not the bytes written.

    pty_screen.py [--rows 24] [--cols 80] [--timeout 30] STEP... -- CMD [ARGS...]

Steps, in order:
    wait:TEXT       until the screen shows TEXT (fails after --timeout)
    gone:TEXT       until the screen no longer shows TEXT
    key:KEYS        types KEYS (\\t is Tab)
    resize:RxC      resizes the terminal (the program gets SIGWINCH)
    dump:FILE       writes the screen (one line a row, trailing blanks cut) to FILE
After the steps the command must exit within --timeout. Exit status 0 when every step passed;
otherwise 1, with the screen on standard error.
"""
import fcntl
import os
import pty
import select
import signal
import struct
import sys
import termios
import time

import pyte


def set_size(fd, rows, cols):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


class Terminal:
    def __init__(self, argv, rows, cols):
        self.screen = pyte.Screen(cols, rows)
        self.stream = pyte.ByteStream(self.screen)
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.environ.setdefault("TERM", "xterm")
            os.execvp(argv[0], argv)
        set_size(self.fd, rows, cols)
        self.status = None

    def pump(self, seconds):
        """Feeds what the program writes into the emulator for up to `seconds`."""
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            ready, _, _ = select.select([self.fd], [], [], left)
            if not ready:
                return
            try:
                data = os.read(self.fd, 65536)
            except OSError:
                data = b""
            if not data:
                self.reap(block=True)
                return
            self.stream.feed(data)

    def reap(self, block=False):
        if self.status is None:
            pid, status = os.waitpid(self.pid, 0 if block else os.WNOHANG)
            if pid == self.pid:
                self.status = status
        return self.status

    def text(self):
        return "\n".join(line.rstrip() for line in self.screen.display)

    def until(self, done, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if done():
                return True
            if self.status is not None:
                return done()
            self.pump(0.05)
        return done()


def main(args):
    rows, cols, timeout = 24, 80, 30.0
    steps = []
    while args and args[0] != "--":
        option = args.pop(0)
        if option == "--rows":
            rows = int(args.pop(0))
        elif option == "--cols":
            cols = int(args.pop(0))
        elif option == "--timeout":
            timeout = float(args.pop(0))
        else:
            steps.append(option)
    if not args or len(args) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    terminal = Terminal(args[1:], rows, cols)
    for step in steps:
        kind, _, value = step.partition(":")
        ok = True
        if kind == "wait":
            ok = terminal.until(lambda: value in terminal.text(), timeout)
        elif kind == "gone":
            ok = terminal.until(lambda: value not in terminal.text(), timeout)
        elif kind == "key":
            os.write(terminal.fd, value.replace("\\t", "\t").encode())
            terminal.pump(0.1)
        elif kind == "resize":
            rows, cols = (int(n) for n in value.split("x"))
            terminal.screen.resize(rows, cols)
            set_size(terminal.fd, rows, cols)
            terminal.pump(0.1)
        elif kind == "dump":
            with open(value, "w") as out:
                out.write(terminal.text() + "\n")
        else:
            print(f"pty_screen: unknown step {step}", file=sys.stderr)
            return 2
        if not ok:
            print(f"pty_screen: step {step} failed; the screen:\n{terminal.text()}", file=sys.stderr)
            os.kill(terminal.pid, signal.SIGKILL)
            terminal.reap(block=True)
            return 1
    if not terminal.until(lambda: terminal.reap() is not None, timeout):
        print(f"pty_screen: the command did not exit; the screen:\n{terminal.text()}",
              file=sys.stderr)
        os.kill(terminal.pid, signal.SIGKILL)
        terminal.reap(block=True)
        return 1
    status = terminal.status
    return os.waitstatus_to_exitcode(status) if status is not None else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
