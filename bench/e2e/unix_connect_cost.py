#!/usr/bin/env python3
"""bench/e2e/unix_connect_cost.py SOCKET_PATH: microseconds per unix-socket connect + accept +
close, 2,000 times, to a socket this script binds at SOCKET_PATH. Run it outside and inside
`sandgate run` (from a working folder the run can write) to price the connect supervisor:

    cd WORK && python3 unix_connect_cost.py WORK/out.sock
    cd WORK && sandgate run -- python3 unix_connect_cost.py WORK/in.sock
"""
import socket, os, time, sys
path = sys.argv[1]
srv = socket.socket(socket.AF_UNIX); 
try: os.unlink(path)
except FileNotFoundError: pass
srv.bind(path); srv.listen(128)
n = 2000
t = time.perf_counter()
for i in range(n):
    c = socket.socket(socket.AF_UNIX); c.connect(path); a, _ = srv.accept(); a.close(); c.close()
dt = time.perf_counter() - t
print("unix-connect-us %.1f" % (dt / n * 1e6))
