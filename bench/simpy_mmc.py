#!/usr/bin/python3
# simpy_mmc.py - the M/M/c queue of bench/mmc.yaml written in SimPy, to set
# llmsim's speed beside a general-purpose discrete-event library's: c = 4
# servers, Poisson arrivals at 3.6/s, exponential service at 1/s (rho =
# 0.9), FIFO, one seeded Python Random stream (service times drawn at
# arrival). Prints
#   simpy version=V customers=N wall_s=W wait_s=M
# where wall_s times the event loop alone (simulate(), until the last
# customer leaves) and wait_s is the mean time from arrival to the start of
# service. Written for SimPy 2, the version Debian 12 ships (python3-simpy
# 2.3.1, module SimPy, for /usr/bin/python3 only); it pops five event
# notices per customer: its activation, its resumption when granted a
# server, the end of its service hold, its resumption after the release,
# and the source's hold until the next arrival. Exits 77 when SimPy does
# not import. Usage: simpy_mmc.py N [SEED]
import random
import sys
import time

SERVERS = 4
ARRIVAL_RATE = 3.6
SERVICE_RATE = 1.0


def run(n, rng):
    from SimPy.Simulation import Process, Resource, Simulation, hold, release, request

    sim = Simulation()
    servers = Resource(capacity=SERVERS, sim=sim)
    acc = [0.0, 0]  # total wait, customers served

    class Customer(Process):
        def visit(self, service):
            arrival = sim.now()
            yield request, self, servers
            acc[0] += sim.now() - arrival
            acc[1] += 1
            yield hold, self, service
            yield release, self, servers

    class Source(Process):
        def generate(self):
            for _ in range(n):
                c = Customer(sim=sim)
                sim.activate(c, c.visit(rng.expovariate(SERVICE_RATE)))
                yield hold, self, rng.expovariate(ARRIVAL_RATE)

    src = Source(sim=sim)
    sim.activate(src, src.generate())
    t0 = time.perf_counter()
    sim.simulate(until=float("inf"))
    return time.perf_counter() - t0, acc


def main():
    if len(sys.argv) < 2:
        sys.stderr.write("usage: simpy_mmc.py N [SEED]\n")
        return 2
    n = int(sys.argv[1])
    rng = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 7)
    try:
        import SimPy.Simulation
    except ImportError:
        print("simpy_mmc: %s cannot import SimPy (apt-get install python3-simpy)"
              % sys.executable)
        return 77
    wall, acc = run(n, rng)
    if acc[1] != n:
        sys.stderr.write("simpy_mmc: %d of %d customers served\n" % (acc[1], n))
        return 1
    print("simpy version=%s customers=%d wall_s=%.3f wait_s=%.6f"
          % (SimPy.__version__, n, wall, acc[0] / n))
    return 0


if __name__ == "__main__":
    sys.exit(main())
