#!/usr/bin/python3
"""Runs a command under a real pseudo-terminal and renders its output with a real terminal
emulator (pyte, Debian's python3-pyte), then plays steps against the rendered screen, as a
person at the terminal would: the end-to-end tests read what is shown, not the bytes written.

    pty_screen.py [--rows 24] [--cols 80] [--timeout 30] STEP... -- CMD [ARGS...]

Steps, in order:
    wait:TEXT       until the screen shows TEXT (fails after --timeout)
    gone:TEXT       until the screen no longer shows TEXT
    key:KEYS        types KEYS (\\t is Tab, \\r Enter, \\e Escape, \\xHH any)
    resize:RxC      resizes the terminal (the program gets SIGWINCH)
    dump:FILE       writes the screen (one line a row, trailing blanks cut) to FILE
    quiet:SECONDS   until the program has written nothing for SECONDS
    sleep:SECONDS   lets SECONDS pass (what the program writes meanwhile is shown)
    snap:NAME       remembers the screen as NAME: every cell (character and attributes) and
                    the cursor (position, shown or hidden)
    same:NAME       the screen must be exactly NAME again (fails at once, naming the cells)
    touch:FILE      creates FILE (a signal to the program)
After the steps the command must exit within --timeout. Exit status 0 when every step passed;
otherwise 1, with the screen on standard error.
"""
import fcntl
import os
import pty
import re
import select
import signal
import struct
import sys
import termios
import time

import pyte


# Control sequences pyte does not know and would misread as others: CSI > ... (vim's
# modifyOtherKeys, ESC[>4;2m, would read as SGR 4, underline), CSI = ... and CSI < ....
# They change nothing that is drawn; the terminal here drops them, as a real one ignores what
# it does not support. A sequence cut at a chunk's end waits for the rest.
UNSUPPORTED = re.compile(rb"\x1b\[[<=>][0-9;:]*[ -/]*[@-~]")
UNFINISHED = re.compile(rb"\x1b(\[([<=>][0-9;:]*[ -/]*)?)?$")


class Screen(pyte.Screen):
    def select_graphic_rendition(self, *attrs, private=False):
        if not private:  # CSI ? ... m is a query (xterm's XTQMODKEYS), not a rendition
            super().select_graphic_rendition(*attrs)


def set_size(fd, rows, cols):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


class Terminal:
    def __init__(self, argv, rows, cols):
        self.screen = Screen(cols, rows)
        self.stream = pyte.ByteStream(self.screen)
        self.unfinished = b""
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            set_size(0, rows, cols)  # before the program starts: it reads its size once at once
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
            self.feed(data)

    def reap(self, block=False):
        if self.status is None:
            pid, status = os.waitpid(self.pid, 0 if block else os.WNOHANG)
            if pid == self.pid:
                self.status = status
        return self.status

    def feed(self, data):
        data = self.unfinished + data
        cut = UNFINISHED.search(data)
        self.unfinished, data = (data[cut.start():], data[:cut.start()]) if cut else (b"", data)
        self.stream.feed(UNSUPPORTED.sub(b"", data))

    def quiet(self, seconds, timeout):
        """Feeds output until none has come for `seconds` (at most `timeout`)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.status is None:
            ready, _, _ = select.select([self.fd], [], [], seconds)
            if not ready:
                return True
            try:
                data = os.read(self.fd, 65536)
            except OSError:
                data = b""
            if not data:
                self.reap(block=True)
                return True
            self.feed(data)
        return self.status is not None

    def snapshot(self):
        """Every cell, with its attributes, and the cursor."""
        cells = tuple(
            tuple(self.screen.buffer[y][x] for x in range(self.screen.columns))
            for y in range(self.screen.lines))
        cursor = (self.screen.cursor.y, self.screen.cursor.x, self.screen.cursor.hidden)
        return cells, cursor, self.text()

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


def same_screen(before, now, name):
    """Whether the screen is `before` again, cell by cell; if not, says where it differs."""
    (cells_before, cursor_before, text_before), (cells_now, cursor_now, _) = before, now
    if cells_before == cells_now and cursor_before == cursor_now:
        return True
    print(f"pty_screen: the screen is not {name} again; it was:\n{text_before}", file=sys.stderr)
    if cursor_before != cursor_now:
        print(f"pty_screen: cursor (row, column, hidden) was {cursor_before}, is {cursor_now}",
              file=sys.stderr)
    differences = [(y, x, cells_before[y][x], cells_now[y][x])
                   for y in range(len(cells_before)) for x in range(len(cells_before[y]))
                   if cells_before[y][x] != cells_now[y][x]]
    for y, x, was, is_now in differences[:10]:
        print(f"pty_screen: row {y} column {x} was {was}, is {is_now}", file=sys.stderr)
    if len(differences) > 10:
        print(f"pty_screen: ... {len(differences)} cells differ", file=sys.stderr)
    return False


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
    snapshots = {}
    for step in steps:
        kind, _, value = step.partition(":")
        ok = True
        if kind == "wait":
            ok = terminal.until(lambda: value in terminal.text(), timeout)
        elif kind == "gone":
            ok = terminal.until(lambda: value not in terminal.text(), timeout)
        elif kind == "key":
            keys = value.replace("\\t", "\t").replace("\\r", "\r").replace("\\e", "\x1b")
            keys = re.sub(r"\\x([0-9a-fA-F]{2})", lambda m: chr(int(m.group(1), 16)), keys)
            os.write(terminal.fd, keys.encode())
            terminal.pump(0.1)
        elif kind == "quiet":
            ok = terminal.quiet(float(value), timeout)
        elif kind == "sleep":
            terminal.pump(float(value))
        elif kind == "snap":
            snapshots[value] = terminal.snapshot()
        elif kind == "same":
            ok = same_screen(snapshots[value], terminal.snapshot(), value)
        elif kind == "touch":
            open(value, "a").close()
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
