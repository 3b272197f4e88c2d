#!/usr/bin/python3
"""A small full-screen program for the end-to-end tests, as an agent's terminal interface is one:
curses on the alternate screen, a known pattern on every row (in colour and reverse video), the
cursor hidden, its keys shown on the last row, and on SIGWINCH (curses' KEY_RESIZE) the pattern
drawn again for the new size the way such programs do it: erase, draw, refresh (curses sends
only what differs from what it believes is on screen). `q` ends it.

    pty_fullscreen.py
"""
import curses


def pattern_row(row, columns):
    text = "".join(chr(ord("a") + (row + column) % 26) for column in range(columns))
    return f"{row:02d} {text}"[: columns - 1]


def draw(screen, typed):
    screen.erase()
    rows, columns = screen.getmaxyx()
    for row in range(rows - 1):
        attribute = curses.color_pair(1 + row % 3) if curses.has_colors() else curses.A_BOLD
        screen.addstr(row, 0, pattern_row(row, columns), attribute)
    status = f" fullscreen {rows}x{columns} typed:{typed}"
    screen.addstr(rows - 1, 0, status[: columns - 1].ljust(columns - 1), curses.A_REVERSE)
    screen.refresh()


def main(screen):
    curses.curs_set(0)
    if curses.has_colors():
        curses.start_color()
        curses.use_default_colors()
        curses.init_pair(1, curses.COLOR_GREEN, -1)
        curses.init_pair(2, curses.COLOR_YELLOW, curses.COLOR_BLUE)
        curses.init_pair(3, curses.COLOR_WHITE, curses.COLOR_RED)
    typed = ""
    draw(screen, typed)
    while True:
        key = screen.getch()
        if key == ord("q"):
            return
        if key == curses.KEY_RESIZE:
            curses.update_lines_cols()
        elif 32 <= key < 127:
            typed = (typed + chr(key))[-20:]
        draw(screen, typed)


if __name__ == "__main__":
    curses.wrapper(main)
