#!/usr/bin/env python3
"""How much Megatron-LM's blocking pipeline exchanges cost beyond the schedule's bubble.

An event model of Megatron-LM's 2021 pipeline schedules (megatron/schedules.py, with and
without interleaving) under two semantics for the point-to-point transfers:

- dataflow: a slot starts once its rank is free and its input has arrived (what dtsim runs);
- exchange: after each step (a forward in the warm-up, a forward and a backward in the
  interleaved steady state, a backward in the cool-down; every slot without interleaving) a
  rank runs one `batch_isend_irecv` of that step's outputs and the next step's inputs, waits for
  all of it and synchronises the device (p2p_communication.py `_communicate`). A transfer takes
  place once both its sender and its receiver have reached their exchange, so the stages move
  in lockstep.

Stages are balanced; a forward costs 1/v and a backward (recompute and backward) 3/v of a
stage's work per micro-batch; each transfer costs X of that. `tlast` adds work to the last
virtual stage (the logits). Prints each SC'21 pipeline row's step under both semantics and
the bubble formula (p - 1) / (v·m + p - 1). docs/validation.md quotes it (2026-12-04).

    python3 bench/pipeline_lockstep.py
"""
import functools
import sys

sys.setrecursionlimit(1_000_000)


def steps_of(p, stage, m, v):
    """The stage's slots (forward?, micro-batch, chunk) grouped into Megatron's steps."""
    total = m * v

    def slot(k, forward):
        chunk = (k % (p * v)) // p
        return (forward, (k // (p * v)) * p + k % p, chunk if forward else v - 1 - chunk)

    warmup = min(p - stage - 1, m) if v == 1 else min(2 * (p - stage - 1) + (v - 1) * p, total)
    steps, f, b = [], 0, 0
    while f < warmup:
        steps.append([slot(f, True)])
        f += 1
    while f < total:
        steps.append([slot(f, True), slot(b, False)])
        f, b = f + 1, b + 1
    while b < total:
        steps.append([slot(b, False)])
        b += 1
    if v == 1:  # without interleaving an exchange follows every slot
        steps = [[s] for step in steps for s in step]
    return steps


def step_time(p, m, v, mode, transfer=0.0, tlast=0.0):
    steps = [steps_of(p, s, m, v) for s in range(p)]
    where = {(s, *slot): i for s in range(p) for i, step in enumerate(steps[s]) for slot in step}
    last = p * v - 1

    def cost(stage, forward, chunk):
        extra = tlast if chunk * p + stage == last else 0.0
        return (1 + extra) / v if forward else (3 + 2 * extra) / v

    def producer(stage, forward, micro, chunk):
        virtual = chunk * p + stage + (-1 if forward else 1)
        if virtual < 0 or virtual > last:
            return None
        return (virtual % p, forward, micro, virtual // p)

    @functools.lru_cache(maxsize=None)
    def slot_end(stage, forward, micro, chunk):
        i = where[(stage, forward, micro, chunk)]
        t = start(stage, i)
        for slot in steps[stage][i]:
            if mode == "dataflow":
                source = producer(stage, *slot)
                if source is not None:
                    t = max(t, slot_end(*source) + transfer)
            t += cost(stage, slot[0], slot[2])
            if slot == (forward, micro, chunk):
                return t

    def step_end(stage, i):
        return slot_end(stage, *steps[stage][i][-1])

    def posted(stage, i):  # when the rank reaches the exchange before step i
        return step_end(stage, i - 1) if i > 0 else 0.0

    @functools.lru_cache(maxsize=None)
    def start(stage, i):
        if mode == "dataflow":
            return step_end(stage, i - 1) if i > 0 else 0.0
        mine = posted(stage, i)
        t = mine
        if i > 0:  # the previous step's sends, matched at their consumers' exchanges
            for slot in steps[stage][i - 1]:
                virtual = slot[2] * p + stage + (1 if slot[0] else -1)
                if 0 <= virtual <= last:
                    consumer = (virtual % p, slot[0], slot[1], virtual // p)
                    t = max(t, max(mine, posted(consumer[0], where[consumer])) + transfer)
        for slot in steps[stage][i]:  # this step's inputs, sent at their producers' exchanges
            source = producer(stage, *slot)
            if source is not None:
                t = max(t, max(mine, step_end(source[0], where[source])) + transfer)
        return t

    return max(step_end(s, len(steps[s]) - 1) for s in range(p))


def main():
    rows = [("39B", 2, 12, 1), ("76B", 4, 28, 3), ("145B", 8, 48, 2), ("310B", 16, 144, 2),
            ("530B", 35, 280, 3), ("1T", 64, 512, 1)]
    print("row    p    m  v  transfer tlast   dataflow   exchange  ratio  bubble formula")
    for name, p, m, v in rows:
        for transfer, tlast in ((0.0, 0.0), (0.01, 0.0), (0.01, 0.1)):
            flow = step_time(p, m, v, "dataflow", transfer, tlast)
            lock = step_time(p, m, v, "exchange", transfer, tlast)
            print(f"{name:5} {p:3} {m:4} {v:2} {transfer:8} {tlast:5} {flow:10.2f} {lock:10.2f} "
                  f"{lock / flow:6.4f}  {(p - 1) / (v * m + p - 1) * 100:5.2f} %")


if __name__ == "__main__":
    main()
